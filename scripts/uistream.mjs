// Writes the Vercel AI SDK's UI message stream for a recorded chat-completions stream: what a
// front end behind `toUIMessageStreamResponse()` receives when the provider sent those bytes.
// The SDK and its OpenAI-compatible provider are the pinned lens packages, run unmodified on a
// mocked fetch; the tools are declared without `execute` (the application runs them).
//
// Usage: NODE_PATH=webapp/lenses/node/node_modules node scripts/uistream.mjs RECORDING.sse > OUT.sse
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";

const require = createRequire(`${process.cwd()}/webapp/lenses/node/`);
const { streamText, jsonSchema, tool } = await import(require.resolve("ai"));
const { createOpenAICompatible } = await import(require.resolve("@ai-sdk/openai-compatible"));

const sse = readFileSync(process.argv[2], "utf8");
const names = new Set();
for (const line of sse.split(/\r?\n/)) {
	if (!line.startsWith("data:")) continue;
	try {
		for (const choice of JSON.parse(line.slice(5))?.choices ?? []) {
			for (const fragment of choice?.delta?.tool_calls ?? []) {
				if (fragment?.function?.name) names.add(fragment.function.name);
			}
		}
	} catch {
		// not JSON
	}
}
const tools = {};
for (const name of names) {
	tools[name] = tool({ description: name, inputSchema: jsonSchema({ type: "object", additionalProperties: true }) });
}
const fetch = async () => new Response(sse, { status: 200, headers: { "Content-Type": "text/event-stream" } });
const provider = createOpenAICompatible({ name: "recording", baseURL: "http://recording.invalid/v1", apiKey: "x", fetch });
const result = streamText({ model: provider.chatModel("recorded-model"), prompt: "(recorded)", tools, maxRetries: 0 });
const response = result.toUIMessageStreamResponse();
process.stdout.write(Buffer.from(await response.arrayBuffer()));
