// The Vercel AI SDK's generateText (a request without "stream": true) pointed at BASE_URL: the
// calls it reads from a non-stream chat.completion. Run from webapp/lenses/node with
// `node --input-type=module -` (the script on stdin); prints {calls, error}.
const { generateText, jsonSchema, tool } = await import("ai");
const { createOpenAICompatible } = await import("@ai-sdk/openai-compatible");

const provider = createOpenAICompatible({ name: "replay", baseURL: process.env.BASE_URL, apiKey: "unused" });
const schema = jsonSchema({ type: "object", additionalProperties: true });
const tools = {
	get_weather: tool({ description: "weather", inputSchema: schema }),
	get_time: tool({ description: "time", inputSchema: schema }),
};
let calls = [];
let error = null;
try {
	const result = await generateText({ model: provider.chatModel("gpt-4o"), prompt: "hi", tools, maxRetries: 0 });
	calls = result.toolCalls.map((call) => ({ id: call.toolCallId, name: call.toolName, input: call.input }));
} catch (caught) {
	error = { status: caught.statusCode ?? null, message: String(caught.message) };
}
console.log(JSON.stringify({ calls, error }));
