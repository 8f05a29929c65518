"""Other APIs' streams read in their own terms: Gemini's `streamGenerateContent`, Bedrock's
ConverseStream events, Ollama's native `/api/chat` and the Vercel AI SDK's UI message stream.

Each module reads one API's events by its own fields (its block index or call id, its own stop
reason) into the chunks that say the same thing (`webapp.core.readers.bridge`): a call opened
by its own header, its arguments as its own pieces or its own whole object, one finish from
its own stop reason, numbered in the order calls open. The contract then reads what the stream
means from them, and finds only what those fields prove: a mapping sends every piece with its
call's number and one finish, so no chat-completions quirk (a missing index, a chunk without
choices) can come of the mapping itself. Pure: no I/O.
"""

from __future__ import annotations

from typing import Any

from webapp.core.readers.bridge import Mapper
from webapp.core.readers.natives.bedrock import bedrock_event, is_bedrock
from webapp.core.readers.natives.gemini import gemini_event, is_gemini
from webapp.core.readers.natives.ollama import is_ollama, ollama_event
from webapp.core.readers.natives.uistream import ui_event

NATIVES: dict[str, tuple[str, str, Mapper]] = {
    "gemini": (
        "Gemini's native streamGenerateContent stream",
        "each functionCall {name, args} of the first candidate is one whole call, its args "
        "object its arguments (a call streamed with willContinue and partialArgs gets the "
        "object its values build); text is content, a thought's text reasoning; finishReason "
        "is the finish (STOP, Gemini's only normal end, is tool_calls after a call; "
        "MAX_TOKENS is length)",
        gemini_event,
    ),
    "bedrock": (
        "Amazon Bedrock's ConverseStream output",
        "contentBlockStart with start.toolUse {toolUseId, name} opens a call; each "
        "contentBlockDelta's delta.toolUse.input appends to the call of its "
        "contentBlockIndex; delta.text is content; messageStop.stopReason is the finish "
        "(tool_use -> tool_calls, end_turn -> stop, max_tokens -> length)",
        bedrock_event,
    ),
    "ollama": (
        "Ollama's native /api/chat stream",
        "each entry of message.tool_calls is one whole call, its arguments object its "
        "arguments; content is content, thinking reasoning; done: true is the finish "
        '(done_reason "stop", Ollama\'s normal end, is tool_calls after a call; "length" '
        "is length)",
        ollama_event,
    ),
    "vercel": (
        "the Vercel AI SDK's UI message stream",
        "tool-input-start {toolCallId, toolName} opens a call; each tool-input-delta's "
        "inputTextDelta appends to the call of its toolCallId; tool-input-available's input "
        "is the call's arguments when no piece came before it; text-delta is content; "
        "finish is the finish (tool_calls after a call)",
        ui_event,
    ),
}
"""What each API's stream is, how it is read, and its mapper."""


def native_kind(value: dict[str, Any], event: str | None) -> str | None:
    """ "gemini", "bedrock" or "ollama" when the record is one of their events."""
    if is_gemini(value):
        return "gemini"
    if is_bedrock(value, event):
        return "bedrock"
    if is_ollama(value):
        return "ollama"
    return None
