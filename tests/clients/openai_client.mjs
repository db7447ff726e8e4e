// The official OpenAI Node client against `tachyon serve` (run by
// run_openai_node.sh): models, non-streamed and streamed chat, a streamed
// tool call the client reassembles, the usage chunk, and errors surfaced as
// the client's error types. The shipped model is tiny, so the checks are on
// structure, not wording.
import assert from "node:assert/strict";
import OpenAI from "openai";

const client = new OpenAI({ baseURL: process.env.TACHYON_URL, apiKey: process.env.TACHYON_KEY, maxRetries: 0 });
const model = process.env.TACHYON_MODEL;
const tools = [
  {
    type: "function",
    function: {
      name: "search_logs",
      description: "Searches the logs of one service.",
      parameters: {
        type: "object",
        properties: { service: { type: "string" }, level: { type: "string", enum: ["ERROR", "WARN", "INFO"] } },
        required: ["service"],
        additionalProperties: false,
      },
    },
  },
  {
    type: "function",
    function: { name: "error_summary", description: "Counts errors per service.", parameters: { type: "object", properties: {} } },
  },
];
const task = [{ role: "user", content: "Checkout requests fail with 502 since 14:05. Find the root cause." }];

async function check(name, fn) {
  try {
    await fn();
    console.log(`ok   ${name}`);
  } catch (e) {
    console.log(`FAIL ${name}: ${e.stack || e}`);
    process.exitCode = 1;
  }
}

await check("models.list", async () => {
  const ids = [];
  for await (const m of client.models.list()) ids.push(m.id);
  assert.ok(ids.includes(model), `served models: ${ids}`);
});

await check("non-streamed chat", async () => {
  const r = await client.chat.completions.create({ model, messages: task, temperature: 0, max_tokens: 24 });
  assert.equal(r.object, "chat.completion");
  assert.equal(r.choices[0].message.role, "assistant");
  assert.equal(typeof r.choices[0].message.content, "string");
  assert.ok(["stop", "length"].includes(r.choices[0].finish_reason));
  assert.equal(r.usage.total_tokens, r.usage.prompt_tokens + r.usage.completion_tokens);
  assert.ok(r.usage.completion_tokens > 0 && r.usage.completion_tokens <= 24);
});

await check("streamed chat with the usage chunk", async () => {
  const stream = await client.chat.completions.create({
    model, messages: task, temperature: 0, max_tokens: 24, stream: true, stream_options: { include_usage: true },
  });
  const ids = new Set();
  let content = "", role = null, finish = null, usage = null, n = 0;
  for await (const chunk of stream) {
    ids.add(chunk.id);
    n++;
    assert.equal(chunk.object, "chat.completion.chunk");
    if (chunk.usage) usage = chunk.usage;
    if (!chunk.choices.length) continue;
    const c = chunk.choices[0];
    if (c.delta.role) role = c.delta.role;
    if (c.delta.content) content += c.delta.content;
    if (c.finish_reason) finish = c.finish_reason;
  }
  assert.equal(ids.size, 1, "one id for the whole stream");
  assert.equal(role, "assistant");
  assert.ok(n >= 3);
  assert.ok(["stop", "length"].includes(finish));
  assert.ok(usage && usage.completion_tokens > 0, "usage chunk");
  // The same request, not streamed and greedy, writes the same text.
  const r = await client.chat.completions.create({ model, messages: task, temperature: 0, max_tokens: 24 });
  assert.equal(content, r.choices[0].message.content);
});

await check("streamed tool call (tool_choice named), reassembled by the client", async () => {
  const runner = client.beta.chat.completions.stream({
    model, messages: task, tools, temperature: 0, max_tokens: 80,
    tool_choice: { type: "function", function: { name: "search_logs" } },
  });
  const final = await runner.finalChatCompletion();
  const msg = final.choices[0].message;
  assert.equal(final.choices[0].finish_reason, "tool_calls");
  assert.ok(msg.tool_calls.length >= 1);
  const call = msg.tool_calls[0];
  assert.equal(call.type, "function");
  assert.equal(call.function.name, "search_logs");
  assert.match(call.id, /^call_/);
  const args = JSON.parse(call.function.arguments);
  assert.equal(typeof args.service, "string", "required argument present");
  for (const k of Object.keys(args)) assert.ok(["service", "level"].includes(k), `unexpected argument ${k}`);
});

await check("streamed tool call (tool_choice required), reassembled by hand", async () => {
  const stream = await client.chat.completions.create({
    model, messages: task, tools, tool_choice: "required", parallel_tool_calls: false, temperature: 0, max_tokens: 80, stream: true,
  });
  const calls = [];
  let finish = null;
  for await (const chunk of stream) {
    const c = chunk.choices[0];
    if (!c) continue;
    for (const t of c.delta.tool_calls ?? []) {
      calls[t.index] ??= { id: "", name: "", arguments: "" };
      if (t.id) calls[t.index].id = t.id;
      if (t.function?.name) calls[t.index].name = t.function.name;
      if (t.function?.arguments) calls[t.index].arguments += t.function.arguments;
    }
    if (c.finish_reason) finish = c.finish_reason;
  }
  assert.equal(finish, "tool_calls");
  assert.equal(calls.length, 1, "parallel_tool_calls false: one call");
  assert.ok(["search_logs", "error_summary"].includes(calls[0].name));
  assert.equal(typeof JSON.parse(calls[0].arguments), "object");
});

await check("a growing conversation hits the prefix cache (cached_tokens)", async () => {
  const first = await client.chat.completions.create({ model, messages: task, tools, tool_choice: "required", temperature: 0, max_tokens: 80 });
  const call = first.choices[0].message.tool_calls[0];
  const second = await client.chat.completions.create({
    model, tools, temperature: 0, max_tokens: 16,
    messages: [...task, first.choices[0].message, { role: "tool", tool_call_id: call.id, content: "checkout: 12 ERROR lines" }],
  });
  assert.ok(second.usage.prompt_tokens > first.usage.prompt_tokens);
  // The engine's prefix cache holds the first request's prompt: the second one reuses it.
  assert.ok(second.usage.prompt_tokens_details.cached_tokens > 0, "the growing conversation hits the prefix cache");
  console.log(`     cached_tokens on the second turn: ${second.usage.prompt_tokens_details.cached_tokens} of ${second.usage.prompt_tokens}`);
});

await check("response_format json_schema gives JSON for the schema", async () => {
  const r = await client.chat.completions.create({
    model, messages: task, temperature: 0, max_tokens: 60,
    response_format: {
      type: "json_schema",
      json_schema: { name: "answer", schema: { type: "object", properties: { service: { type: "string", maxLength: 20 } }, required: ["service"], additionalProperties: false } },
    },
  });
  if (r.choices[0].finish_reason === "stop") assert.equal(typeof JSON.parse(r.choices[0].message.content).service, "string");
  else assert.ok(r.choices[0].message.content.startsWith("{"));
});

await check("errors surface as the client's error types", async () => {
  await assert.rejects(client.chat.completions.create({ model: "no-such-model", messages: task }), (e) => {
    assert.ok(e instanceof OpenAI.NotFoundError, e.constructor.name);
    assert.equal(e.status, 404);
    assert.equal(e.code, "model_not_found");
    return true;
  });
  await assert.rejects(client.chat.completions.create({ model, messages: task, temperature: 5 }), (e) => {
    assert.ok(e instanceof OpenAI.BadRequestError, e.constructor.name);
    assert.equal(e.status, 400);
    assert.equal(e.param, "temperature");
    assert.match(e.message, /temperature: expected a number in \[0, 2\]/);
    return true;
  });
  await assert.rejects(client.chat.completions.create({ model, messages: [{ role: "wizard", content: "x" }] }), (e) => {
    assert.ok(e instanceof OpenAI.BadRequestError);
    assert.equal(e.param, "messages[0].role");
    return true;
  });
  const stranger = new OpenAI({ baseURL: process.env.TACHYON_URL, apiKey: "wrong-key", maxRetries: 0 });
  await assert.rejects(stranger.models.list(), (e) => {
    assert.ok(e instanceof OpenAI.AuthenticationError, e.constructor.name);
    assert.equal(e.status, 401);
    return true;
  });
});
