// The shape of tachyon's OTLP/HTTP JSON export against the official
// OpenTelemetry JS exporter's (run by run_otel_node.sh). One loopback
// receiver takes both: a chat completion's span from `tachyon serve
// --otlp-endpoint`, and a span sent by @opentelemetry/exporter-trace-otlp-http
// through @opentelemetry/sdk-trace-base. Compared: the field names of the
// request, resource, scope and span objects, ids as lower-case hex strings,
// nanosecond times as decimal strings, attribute value kinds, and the
// continued traceparent.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import http from "node:http";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { BasicTracerProvider, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { trace, context, SpanStatusCode, SpanKind, TraceFlags } from "@opentelemetry/api";

const bodies = [];  // {agent, body}
let wake = () => {};
const receiver = http.createServer((req, res) => {
  let data = "";
  req.on("data", (c) => (data += c));
  req.on("end", () => {
    assert.equal(req.method, "POST");
    assert.equal(req.url, "/v1/traces");
    assert.match(req.headers["content-type"], /^application\/json/);
    bodies.push({ agent: req.headers["user-agent"] || "", body: JSON.parse(data) });
    res.writeHead(200, { "content-type": "application/json" });
    res.end("{}");
    wake();
  });
});
await new Promise((r) => receiver.listen(0, "127.0.0.1", r));
const rxUrl = `http://127.0.0.1:${receiver.address().port}`;
const waitFor = async (pred, what, ms = 20000) => {
  const deadline = Date.now() + ms;
  while (!pred()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => { wake = r; setTimeout(r, 100); });
  }
};

// 1. tachyon: one chat completion whose request carries a traceparent.
const parentTrace = "4bf92f3577b34da6a3ce929d0e0e4736", parentSpan = "00f067aa0ba902b7";
const server = spawn(process.env.TACHYON_BIN,
  ["serve", "--host", "127.0.0.1", "--port", "0", "--model", process.env.TACHYON_MODEL_PATH,
   "--journal-dir", `${process.env.TACHYON_WORK}/runs`, "--otlp-endpoint", rxUrl],
  { env: { ...process.env, OTEL_SERVICE_NAME: "tachyon-shape-test" }, stdio: ["ignore", "pipe", "pipe"] });
let log = "";
let port = null;
const onOut = (d) => {
  log += d;
  const m = log.match(/listening on http:\/\/127\.0\.0\.1:(\d+)/);
  if (m) port = Number(m[1]);
};
server.stdout.on("data", onOut);
server.stderr.on("data", onOut);
try {
  await waitFor(() => port !== null, "tachyon serve to listen");
  const model = process.env.TACHYON_MODEL_PATH.split("/").pop().replace(/\.gguf$/, "");
  const res = await fetch(`http://127.0.0.1:${port}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", traceparent: `00-${parentTrace}-${parentSpan}-01` },
    body: JSON.stringify({ model, messages: [{ role: "user", content: "hello" }], max_tokens: 4, temperature: 0, seed: 3 }),
  });
  assert.equal(res.status, 200, await res.text());
  await waitFor(() => bodies.some((b) => b.agent === "tachyon"), "tachyon's export");
} finally {
  server.kill("SIGTERM");
  await new Promise((r) => server.on("exit", r));
}

// 2. The official JS exporter: a child span of the same parent with an attribute of every kind.
const provider = new BasicTracerProvider({
  resource: resourceFromAttributes({ "service.name": "js-shape-test" }),
  spanProcessors: [new SimpleSpanProcessor(new OTLPTraceExporter({ url: `${rxUrl}/v1/traces` }))],
});
const tracer = provider.getTracer("shape-test", "1.0.0");
const parentCtx = trace.setSpanContext(context.active(), { traceId: parentTrace, spanId: parentSpan, traceFlags: TraceFlags.SAMPLED, isRemote: true });
const span = tracer.startSpan("chat js-model", {
  kind: SpanKind.CLIENT,
  attributes: {
    "gen_ai.operation.name": "chat",
    "gen_ai.usage.input_tokens": 12,
    "gen_ai.request.temperature": 0.5,
    "tachyon.flag": true,
    "gen_ai.response.finish_reasons": ["stop"],
  },
}, parentCtx);
span.setStatus({ code: SpanStatusCode.ERROR, message: "scripted" });
span.end();
await provider.forceFlush();
await provider.shutdown();
receiver.close();

const tachyonBody = bodies.find((b) => b.agent === "tachyon").body;
const jsBody = bodies.find((b) => b.agent !== "tachyon").body;
const typeOf = (v) => (Array.isArray(v) ? "array" : v === null ? "null" : typeof v);
const keys = (o) => Object.keys(o).sort();
const subset = (ours, theirs, where) => {
  for (const k of keys(ours)) {
    assert.ok(k in theirs, `${where}: tachyon writes '${k}', which the JS exporter does not (its fields: ${keys(theirs).join(", ")})`);
    // The same JSON type for the same field, except int64 attribute values:
    // tachyon writes them as strings (the protobuf JSON mapping), the JS
    // exporter as numbers; collectors read both.
    if (k !== "intValue") assert.equal(typeOf(ours[k]), typeOf(theirs[k]), `${where}.${k}: JSON type`);
  }
};

subset(tachyonBody, jsBody, "request");
const ours = tachyonBody.resourceSpans[0], theirs = jsBody.resourceSpans[0];
subset(ours, theirs, "resourceSpans[0]");
subset(ours.resource, theirs.resource, "resource");
subset(ours.scopeSpans[0], theirs.scopeSpans[0], "scopeSpans[0]");
subset(ours.scopeSpans[0].scope, theirs.scopeSpans[0].scope, "scope");
const attr = (attrs, key) => attrs.find((a) => a.key === key)?.value;
assert.equal(attr(ours.resource.attributes, "service.name").stringValue, "tachyon-shape-test");
assert.equal(attr(theirs.resource.attributes, "service.name").stringValue, "js-shape-test");

const oSpan = ours.scopeSpans[0].spans.find((s) => s.name.startsWith("chat "));
const tSpan = theirs.scopeSpans[0].spans[0];
assert.ok(oSpan, "tachyon exported a chat span");
subset(oSpan, tSpan, "span");
for (const s of [oSpan, tSpan]) {
  assert.match(s.traceId, /^[0-9a-f]{32}$/);
  assert.match(s.spanId, /^[0-9a-f]{16}$/);
  assert.match(s.parentSpanId, /^[0-9a-f]{16}$/);
  assert.equal(s.traceId, parentTrace);       // both continued the caller's trace
  assert.equal(s.parentSpanId, parentSpan);
  assert.equal(typeof s.startTimeUnixNano, "string");
  assert.equal(typeof s.endTimeUnixNano, "string");
  assert.match(s.startTimeUnixNano, /^\d{19}$/);
  assert.ok(BigInt(s.endTimeUnixNano) >= BigInt(s.startTimeUnixNano));
  assert.equal(typeof s.kind, "number");
  for (const a of s.attributes) {
    assert.deepEqual(keys(a), ["key", "value"]);
    assert.equal(Object.keys(a.value).length, 1);
  }
}
// The value kinds of the same kinds of attribute agree.
const kindOf = (v) => Object.keys(v)[0];
const pairs = [
  ["gen_ai.operation.name", "gen_ai.operation.name"],
  ["gen_ai.usage.input_tokens", "gen_ai.usage.input_tokens"],
  ["gen_ai.request.temperature", "gen_ai.request.temperature"],
  ["gen_ai.response.finish_reasons", "gen_ai.response.finish_reasons"],
];
for (const [ok, tk] of pairs) {
  const o = attr(oSpan.attributes, ok), t = attr(tSpan.attributes, tk);
  assert.ok(o, `tachyon's span has ${ok}`);
  assert.equal(kindOf(o), kindOf(t), `${ok}: value kind`);
}
assert.equal(typeof attr(oSpan.attributes, "gen_ai.usage.input_tokens").intValue, "string");
assert.match(attr(oSpan.attributes, "gen_ai.usage.input_tokens").intValue, /^\d+$/);
assert.deepEqual(keys(attr(oSpan.attributes, "gen_ai.response.finish_reasons").arrayValue), ["values"]);
assert.equal(kindOf(attr(tSpan.attributes, "tachyon.flag")), "boolValue");
// Status: {code, message} with the same enum numbers.
assert.equal(tSpan.status.code, 2);
subset(oSpan.status, tSpan.status, "status");
console.log(`ok: tachyon's span fields ${keys(oSpan).join(",")} are a subset of the JS exporter's ${keys(tSpan).join(",")}`);
