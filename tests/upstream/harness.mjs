// A long-lived worker that runs the published upstream assembler (pi-ai's openai-completions
// `stream`) against a loopback server, for the differential tests in tests/test_differential.py.
//
// Protocol: one JSON request per stdin line, `{"url": "http://127.0.0.1:PORT/.../v1"}`; one JSON
// reply per stdout line, in the same order: `{"events": [...], "content": [...]}`, or
// `{"crash": "..."}` when the harness itself failed. The first line written is `{"ready": ...}`.
// Nothing else is written to stdout: console output goes to stderr.
import { createInterface } from "node:readline";
import { stream } from "@earendil-works/pi-ai/api/openai-completions";

const out = process.stdout;
for (const name of ["log", "info", "warn", "debug"]) console[name] = console.error;

function model(baseUrl) {
	return {
		id: "streamviz-model",
		name: "streamviz model",
		api: "openai-completions",
		// A neutral provider and a loopback URL: no provider-specific compat applies.
		provider: "streamviz-test",
		baseUrl,
		reasoning: false,
		input: ["text"],
		cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
		contextWindow: 128000,
		maxTokens: 4096,
	};
}

const context = {
	messages: [{ role: "user", content: "What is the weather in Paris?", timestamp: 0 }],
};

// A JSON-safe copy of any value a stream event may carry.
function plain(value) {
	if (value === undefined) return null;
	return JSON.parse(JSON.stringify(value, (_key, item) => (typeof item === "bigint" ? String(item) : item)) ?? "null");
}

function record(event) {
	const item = { type: event.type };
	if ("contentIndex" in event) item.contentIndex = event.contentIndex;
	if ("delta" in event) {
		// Upstream passes a non-string `arguments` through as the delta; the block's text gets
		// String() of it. Report the string and say the raw value was not one.
		if (typeof event.delta === "string") item.delta = event.delta;
		else {
			item.delta = String(event.delta);
			item.deltaType = Array.isArray(event.delta) ? "array" : typeof event.delta;
		}
	}
	if (event.type === "toolcall_end") {
		const call = event.toolCall;
		item.toolCall = { id: plain(call.id), name: plain(call.name), arguments: plain(call.arguments) };
		if (call.argumentsError !== undefined) item.toolCall.argumentsError = String(call.argumentsError);
	}
	if (event.type === "done") item.reason = event.reason;
	if (event.type === "error") {
		item.reason = event.reason;
		item.errorMessage = String(event.error?.errorMessage ?? "");
	}
	return item;
}

function contentOf(message) {
	return (message?.content ?? []).map((block) => {
		if (block.type === "toolCall") {
			return { type: "toolCall", id: plain(block.id), name: plain(block.name), arguments: plain(block.arguments) };
		}
		if (block.type === "text") return { type: "text", text: block.text };
		if (block.type === "thinking") return { type: "thinking", thinking: block.thinking };
		return { type: String(block.type) };
	});
}

async function run(url) {
	const events = [];
	let message = null;
	const options = { apiKey: "test", maxRetries: 0, timeoutMs: 20000 };
	for await (const event of stream(model(url), context, options)) {
		events.push(record(event));
		if (event.type === "done") message = event.message;
		if (event.type === "error") message = event.error;
	}
	return { events, content: contentOf(message) };
}

// Requests are served strictly one at a time, so replies come back in request order.
let queue = Promise.resolve();
const lines = createInterface({ input: process.stdin, crlfDelay: Number.POSITIVE_INFINITY });
lines.on("line", (line) => {
	if (!line.trim()) return;
	queue = queue.then(async () => {
		let reply;
		try {
			reply = await run(JSON.parse(line).url);
		} catch (error) {
			reply = { crash: String(error?.stack ?? error) };
		}
		out.write(`${JSON.stringify(reply)}\n`);
	});
});
lines.on("close", () => {
	queue.then(() => process.exit(0));
});
out.write(`${JSON.stringify({ ready: true, node: process.version })}\n`);
