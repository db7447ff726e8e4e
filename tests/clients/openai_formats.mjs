// The official OpenAI Node client against `tachyon serve` on a random-weight
// model of one chat family (run by run_openai_formats.sh, once per family):
// a chat completion with tools, required, comes back as tool_calls parsed
// from the family's own call syntax, streamed and not, and the conversation
// goes on with the call and its result rendered in that family's format.
// The weights are random: constrained decoding is what makes the call
// well formed, so the checks are on structure, not on the model's choice.
import assert from "node:assert/strict";
import OpenAI from "openai";

const client = new OpenAI({ baseURL: process.env.TACHYON_URL, apiKey: process.env.TACHYON_KEY, maxRetries: 0 });
const model = process.env.TACHYON_MODEL;
const family = process.env.TACHYON_FAMILY;
// Arguments with few values, so that a random model completes a call within max_tokens.
const tools = [
  {
    type: "function",
    function: {
      name: "get_weather",
      description: "Get the current weather for a location.",
      parameters: {
        type: "object",
        properties: {
          location: { type: "string", enum: ["Paris", "Lima"] },
          unit: { type: "string", enum: ["celsius", "fahrenheit"] },
        },
        required: ["location", "unit"],
        additionalProperties: false,
      },
    },
  },
  {
    type: "function",
    function: {
      name: "search_logs",
      description: "Search service logs.",
      parameters: {
        type: "object",
        properties: { level: { type: "string", enum: ["ERROR", "WARN"] } },
        required: ["level"],
        additionalProperties: false,
      },
    },
  },
];
// A system text of its own: Devstral's default one alone outgrows the tiny model's context.
const task = [
  { role: "system", content: "You answer questions about the weather." },
  { role: "user", content: "What's the weather in Paris?" },
];

async function check(name, fn) {
  try {
    await fn();
    console.log(`ok   ${family}: ${name}`);
  } catch (e) {
    console.log(`FAIL ${family}: ${name}: ${e.stack || e}`);
    process.exitCode = 1;
  }
}

function check_call(name, args_text) {
  assert.ok(["get_weather", "search_logs"].includes(name), `a call of a known tool, got ${name}`);
  const args = JSON.parse(args_text);
  if (name === "get_weather") {
    assert.ok(["Paris", "Lima"].includes(args.location), `location from the enum: ${args_text}`);
    assert.ok(["celsius", "fahrenheit"].includes(args.unit), `unit from the enum: ${args_text}`);
  } else {
    assert.ok(["ERROR", "WARN"].includes(args.level), `level from the enum: ${args_text}`);
  }
}

let first = null;

await check("a required tool call comes back as tool_calls", async () => {
  const r = await client.chat.completions.create({
    model, messages: task, tools, tool_choice: "required", parallel_tool_calls: false, temperature: 0, max_tokens: 160,
  });
  const msg = r.choices[0].message;
  assert.equal(r.choices[0].finish_reason, "tool_calls");
  assert.equal(msg.tool_calls.length, 1, "parallel_tool_calls false: one call");
  const call = msg.tool_calls[0];
  assert.equal(call.type, "function");
  assert.ok(call.id.length > 0);
  check_call(call.function.name, call.function.arguments);
  first = r;
});

await check("a streamed required tool call, reassembled from its deltas", async () => {
  const stream = await client.chat.completions.create({
    model, messages: task, tools, tool_choice: "required", parallel_tool_calls: false, temperature: 0, max_tokens: 160, stream: true,
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
  assert.equal(calls.length, 1);
  check_call(calls[0].name, calls[0].arguments);
  // Greedy: the same call as the request that was not streamed.
  if (first) {
    assert.equal(calls[0].name, first.choices[0].message.tool_calls[0].function.name);
    assert.equal(calls[0].arguments, first.choices[0].message.tool_calls[0].function.arguments);
  }
});

await check("the call and its result go back in the family's format, and the conversation goes on", async () => {
  assert.ok(first, "the first request gave a call");
  const call = first.choices[0].message.tool_calls[0];
  const r = await client.chat.completions.create({
    model, tools, temperature: 0, max_tokens: 8,
    messages: [...task, first.choices[0].message, { role: "tool", tool_call_id: call.id, content: "{\"temperature\": 21}" }],
  });
  assert.ok(["stop", "length", "tool_calls"].includes(r.choices[0].finish_reason));
  assert.ok(r.usage.prompt_tokens > first.usage.prompt_tokens, "the second prompt holds the first turn and its result");
});
