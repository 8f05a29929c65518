// The Vercel AI SDK (`ai` + `@ai-sdk/openai-compatible`, from webapp/lenses/node) pointed at
// the proxy: `streamText` with two tools over the real fetch. Prints what the application got,
// the stream id the proxy added, and the response bytes exactly as fetch received them.
// Run from webapp/lenses/node with `node --input-type=module -` (the script on stdin), so that
// the packages resolve from that folder; BASE_URL and API_KEY come from the environment.
const { streamText, jsonSchema, tool } = await import("ai");
const { createOpenAICompatible } = await import("@ai-sdk/openai-compatible");

let streamId = null;
const received = [];
async function seen(url, init) {
	const response = await fetch(url, init);
	streamId = response.headers.get("streamviz-stream-id");
	const [app, copy] = response.body.tee();
	(async () => {
		for await (const piece of copy) received.push(Buffer.from(piece));
	})();
	return new Response(app, { status: response.status, headers: response.headers });
}

const provider = createOpenAICompatible({
	name: "proxy",
	baseURL: process.env.BASE_URL,
	apiKey: process.env.API_KEY,
	fetch: seen,
});
const schema = jsonSchema({ type: "object", additionalProperties: true });
const tools = {
	get_weather: tool({ description: "weather", inputSchema: schema }),
	get_time: tool({ description: "time", inputSchema: schema }),
};
const result = streamText({ model: provider.chatModel("gpt-4o"), prompt: "hi", tools, maxRetries: 0 });
const calls = [];
const errors = [];
for await (const part of result.fullStream) {
	if (part.type === "tool-call") calls.push({ id: part.toolCallId, name: part.toolName, input: part.input });
	else if (part.type === "error" || part.type === "tool-error") errors.push(String(part.error));
}
await new Promise((done) => setImmediate(done));
console.log(JSON.stringify({ streamId, calls, errors, received: Buffer.concat(received).toString("base64") }));
