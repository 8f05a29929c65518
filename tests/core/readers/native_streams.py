"""Streams of other APIs that streamviz reads in their own terms, each with its public origin
beside it (the recorded ones are files in tests/corpus/native/)."""

# ruff: noqa: E501  (the streams are pasted as they come off the wire, one event per line)

from __future__ import annotations

# Ollama's native /api/chat stream with a tool call: the objects of "Chat request (Streaming
# with tools)" in ollama/ollama docs/api.md (snapshot fb30760996871fa9460115c753afd2c60d4ab0f7),
# one per line as the server writes them (application/x-ndjson).
OLLAMA_DOCS = """\
{"model":"llama3.2","created_at":"2025-07-07T20:22:19.184789Z","message":{"role":"assistant","content":"","tool_calls":[{"function":{"name":"get_weather","arguments":{"city":"Tokyo"}}}]},"done":false}
{"model":"llama3.2","created_at":"2025-07-07T20:22:19.19314Z","message":{"role":"assistant","content":""},"done_reason":"stop","done":true,"total_duration":182242375,"load_duration":41295167,"prompt_eval_count":169,"prompt_eval_duration":24573166,"eval_count":15,"eval_duration":115959084}
"""
# The same from a newer server: ToolCall carries an id and ToolCallFunction an index
# (ollama/ollama api/types.go at the same snapshot).
OLLAMA_NEWER = """\
{"model":"llama3.1","created_at":"2026-01-01T10:00:00.1Z","message":{"role":"assistant","content":"","tool_calls":[{"id":"call_k1","function":{"index":0,"name":"get_weather","arguments":{"city":"Paris"}}}]},"done":false}
{"model":"llama3.1","created_at":"2026-01-01T10:00:00.2Z","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop","eval_count":12}
"""
# Ollama's /api/generate stream: docs/api/streaming.mdx at the same snapshot.
OLLAMA_GENERATE = """\
{"model":"gemma4","created_at":"2025-10-26T17:15:24.097767Z","response":"That","done":false}
{"model":"gemma4","created_at":"2025-10-26T17:15:24.166576Z","response":"!","done":true, "done_reason": "stop"}
"""
# The Vercel AI SDK's UI message stream: the parts of vercel/ai
# packages/ai/src/generate-text/__snapshots__/stream-text.test.ts.snap ("toUIMessageStream >
# should send tool call, tool call stream start, tool call deltas, and tool result stream
# parts", commit 02e682d77b0a741c75980a410d53072b60df1bc3), framed as its
# toUIMessageStreamResponse snapshots frame them (`data: {...}` and a blank line, `data: [DONE]`).
VERCEL_UI = """\
data: {"type":"start"}

data: {"type":"start-step"}

data: {"type":"tool-input-start","toolCallId":"call-1","toolName":"tool1"}

data: {"type":"tool-input-delta","toolCallId":"call-1","inputTextDelta":"{ \\"value\\":"}

data: {"type":"tool-input-delta","toolCallId":"call-1","inputTextDelta":" \\"value\\" }"}

data: {"type":"tool-input-available","toolCallId":"call-1","toolName":"tool1","input":{"value":"value"}}

data: {"type":"tool-output-available","toolCallId":"call-1","output":"value-result"}

data: {"type":"finish-step"}

data: {"type":"finish","finishReason":"stop"}

data: [DONE]

"""
# The issue's own: get_weather {"city": "Paris"} in the parts documented in vercel/ai
# content/docs/04-ai-sdk-ui/50-stream-protocol.mdx (commit 05c9fcc846dca1ce280f1d5e2e6356b0ec6700a2).
VERCEL_PARIS = """\
data: {"type":"start"}

data: {"type":"start-step"}

data: {"type":"tool-input-start","toolCallId":"call_1","toolName":"get_weather"}

data: {"type":"tool-input-delta","toolCallId":"call_1","inputTextDelta":"{\\"city\\":"}

data: {"type":"tool-input-delta","toolCallId":"call_1","inputTextDelta":"\\"Paris\\"}"}

data: {"type":"tool-input-available","toolCallId":"call_1","toolName":"get_weather","input":{"city":"Paris"}}

data: {"type":"finish-step"}

data: {"type":"finish"}

data: [DONE]

"""
# streamText's fullStream parts as JSON Lines: the same snapshot file ("result.fullStream >
# should send tool calls"), its undefined members left out.
VERCEL_PARTS = """\
{"type":"start"}
{"type":"start-step","request":{},"warnings":[]}
{"type":"tool-call","toolCallId":"call-1","toolName":"tool1","input":{"value":"value"},"title":"Tool 1"}
{"type":"finish-step","finishReason":"stop","response":{"id":"id-0","modelId":"mock-model-id"},"usage":{"inputTokens":3,"outputTokens":10,"totalTokens":13}}
{"type":"finish","finishReason":"stop","totalUsage":{"inputTokens":3,"outputTokens":10,"totalTokens":13}}
"""
