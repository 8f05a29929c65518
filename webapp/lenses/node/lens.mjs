// A client lens: runs one published Node.js client library, unmodified, on streams given as SSE
// text, and reports the tool calls it hands the application or the error it raised.
//
// Usage: node lens.mjs pi-ai|vercel-ai < {"streams": ["data: ...\n\n", ...]}
// Writes one JSON line to stdout: {"results": [{"status", "calls", "error"}, ...]}, one per stream
// in order. Anything the libraries print goes to stderr. The versions run are pinned in
// package.json (and in webapp/lenses/pins.py, which checks them).
import { createServer } from "node:http";
import { readFileSync } from "node:fs";

const out = process.stdout;
for (const name of ["log", "info", "warn", "debug", "error"]) console[name] = (...args) => process.stderr.write(`${args.join(" ")}\n`);

const PROMPT = "What is the weather in Paris?";

// The argument a library holds, as text: a string as is, anything else as JSON.
function asText(value) {
	if (typeof value === "string") return value;
	if (value === undefined) return null;
	return JSON.stringify(value);
}

function plain(value) {
	return value === undefined ? null : value;
}

function describe(error) {
	if (error == null) return "unknown error";
	const name = error.name && error.name !== "Error" ? `${error.name}: ` : "";
	return `${name}${error.message ?? String(error)}`;
}

// The names a stream's fragments carry: the tools an application would have declared.
function toolNames(sse) {
	const names = new Set();
	for (const line of sse.split(/\r?\n/)) {
		if (!line.startsWith("data:")) continue;
		try {
			const chunk = JSON.parse(line.slice(5));
			for (const choice of chunk?.choices ?? []) {
				for (const fragment of choice?.delta?.tool_calls ?? []) {
					const name = fragment?.function?.name;
					if (typeof name === "string" && name) names.add(name);
				}
			}
		} catch {
			// not JSON: the library will say so
		}
	}
	return [...names];
}

// pi-ai: `stream()` of api/openai-completions against a loopback server serving the bytes.
async function piAi(sse) {
	const { stream } = await import("@earendil-works/pi-ai/api/openai-completions");
	const body = Buffer.from(sse, "utf8");
	const server = createServer((request, response) => {
		request.resume();
		request.on("end", () => {
			response.writeHead(200, { "Content-Type": "text/event-stream", "Content-Length": body.length, Connection: "close" });
			response.end(body);
		});
	});
	await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
	const baseUrl = `http://127.0.0.1:${server.address().port}/v1`;
	const model = {
		id: "streamviz-model",
		name: "streamviz model",
		api: "openai-completions",
		provider: "streamviz-lens",
		baseUrl,
		reasoning: false,
		input: ["text"],
		cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
		contextWindow: 128000,
		maxTokens: 4096,
	};
	const context = { messages: [{ role: "user", content: PROMPT, timestamp: 0 }] };
	let message = null;
	let error = null;
	try {
		for await (const event of stream(model, context, { apiKey: "lens", maxRetries: 0, timeoutMs: 20000 })) {
			if (event.type === "done") message = event.message;
			if (event.type === "error") {
				message = event.error;
				error = String(event.error?.errorMessage ?? "error");
			}
		}
	} finally {
		server.close();
	}
	const calls = (message?.content ?? [])
		.filter((block) => block.type === "toolCall")
		.map((block) => {
			const call = { id: plain(block.id), name: plain(block.name), arguments: asText(block.arguments) };
			if (block.argumentsError !== undefined) call.invalid = String(block.argumentsError);
			return call;
		});
	return { status: error === null ? "ok" : "error", calls, error };
}

// vercel-ai: `streamText` with @ai-sdk/openai-compatible on a mocked fetch; every name the stream
// carries is declared as a tool taking any object, as the application would have declared it.
async function vercelAi(sse) {
	const { streamText, jsonSchema, tool } = await import("ai");
	const { createOpenAICompatible } = await import("@ai-sdk/openai-compatible");
	const fetch = async () =>
		new Response(sse, { status: 200, headers: { "Content-Type": "text/event-stream" } });
	const provider = createOpenAICompatible({ name: "lens", baseURL: "http://lens.invalid/v1", apiKey: "lens", fetch });
	const tools = {};
	for (const name of toolNames(sse)) {
		tools[name] = tool({ description: name, inputSchema: jsonSchema({ type: "object", additionalProperties: true }) });
	}
	const result = streamText({ model: provider.chatModel("streamviz-model"), prompt: PROMPT, tools, maxRetries: 0 });
	const calls = [];
	const errors = [];
	for await (const part of result.fullStream) {
		if (part.type === "tool-call") {
			const call = { id: plain(part.toolCallId), name: plain(part.toolName), arguments: asText(part.input) };
			if (part.invalid) {
				call.invalid = describe(part.error);
				errors.push(`${part.toolName || "a call"}: ${describe(part.error)}`);
			}
			calls.push(call);
		} else if (part.type === "tool-error") {
			errors.push(`${part.toolName || "a call"}: ${describe(part.error)}`);
		} else if (part.type === "error") {
			errors.push(describe(part.error));
		}
	}
	return { status: errors.length ? "error" : "ok", calls, error: errors.length ? errors.join("; ") : null };
}

const LENSES = { "pi-ai": piAi, "vercel-ai": vercelAi };

async function main() {
	const lens = LENSES[process.argv[2]];
	if (!lens) throw new Error(`no such lens: ${process.argv[2]}`);
	const { streams } = JSON.parse(readFileSync(0, "utf8"));
	const results = [];
	for (const sse of streams) {
		try {
			results.push(await lens(sse));
		} catch (error) {
			results.push({ status: "error", calls: [], error: describe(error) });
		}
	}
	// Wait for the reply to be handed over: process.exit() does not wait for a pipe to drain,
	// so a long reply (a call with a megabyte of arguments) would be cut off.
	await new Promise((resolve) => out.write(`${JSON.stringify({ results })}\n`, resolve));
}

main().then(
	() => process.exit(0),
	(error) => {
		process.stderr.write(`${error?.stack ?? error}\n`);
		process.exit(3);
	},
);
