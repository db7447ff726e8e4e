// The official MCP TypeScript SDK's client against tachyon's MCP server:
// over stdio (`tachyon mcp serve`, MCP_MODE=stdio) or Streamable HTTP
// (`tachyon serve`'s /mcp, MCP_MODE=http). Lists the tools, calls a built-in
// tool (and a bad call), runs an agent to a verified answer with progress
// and structuredContent (checked by the SDK against the outputSchema),
// cancels a call, and closes the session.
// env: MCP_MODE, TACHYON_BIN + TACHYON_ARGS (stdio, JSON array) or MCP_URL + TACHYON_KEY (http),
//      INCIDENT (the incident directory), TASK (the agent's task)
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const mode = process.env.MCP_MODE;
const incident = process.env.INCIDENT;
const task = process.env.TASK;

let transport;
if (mode === 'stdio') {
  transport = new StdioClientTransport({
    command: process.env.TACHYON_BIN,
    args: JSON.parse(process.env.TACHYON_ARGS),
    stderr: 'inherit',
  });
} else {
  const headers = process.env.TACHYON_KEY ? { Authorization: `Bearer ${process.env.TACHYON_KEY}` } : {};
  transport = new StreamableHTTPClientTransport(new URL(process.env.MCP_URL), { requestInit: { headers } });
}
const client = new Client({ name: 'tachyon-sdk-test', version: '1.0.0' });
await client.connect(transport);
assert.equal(client.getServerVersion().name, 'tachyon');
if (mode === 'http') assert.ok(transport.sessionId, 'the server issued an MCP-Session-Id');
console.log(`${mode}: connected (protocol ${transport.protocolVersion ?? 'negotiated'})`);

// tools/list: the built-in tool and the agent, with their schemas.
const { tools } = await client.listTools();
const names = tools.map((t) => t.name);
assert.ok(names.includes('read_lines'), `read_lines is listed: ${names}`);
const agent = tools.find((t) => t.name === 'incident-analyst');
assert.ok(agent, `the agent is listed: ${names}`);
assert.deepEqual(agent.inputSchema.required, ['task', 'incident_dir']);
assert.equal(agent.outputSchema.type, 'object');
assert.ok(agent.outputSchema.required.includes('root_cause_service'));
console.log(`${mode}: tools ${names.join(', ')}`);

// A built-in tool: a real call, and one its schema refuses (an isError result).
const log = readdirSync(`${incident}/logs`).find((f) => f.endsWith('.log'));
const service = log.replace(/\.log$/, '');
const lines = await client.callTool({ name: 'read_lines', arguments: { id: `${service}:1` } });
assert.notEqual(lines.isError, true, JSON.stringify(lines));
assert.equal(lines.content[0].type, 'text');
assert.ok(lines.content[0].text.length > 0);
const bad = await client.callTool({ name: 'read_lines', arguments: { id: 7 } });
assert.equal(bad.isError, true, JSON.stringify(bad));
console.log(`${mode}: read_lines answered, a bad call is isError`);

// An unknown tool is a JSON-RPC error.
await assert.rejects(client.callTool({ name: 'no-such-tool', arguments: {} }), /no-such-tool/);

// The agent: runs to a verified answer, a progress notification per model turn.
let progress = 0;
const answer = await client.callTool(
  { name: 'incident-analyst', arguments: { task, incident_dir: incident } },
  undefined,
  { onprogress: () => ++progress, timeout: 120000, resetTimeoutOnProgress: true },
);
assert.notEqual(answer.isError, true, JSON.stringify(answer));
assert.ok(progress >= 1, 'progress notifications arrived');
assert.equal(typeof answer.structuredContent.root_cause_service, 'string');
assert.ok(answer.structuredContent.evidence.length >= 1);
console.log(`${mode}: agent answered after ${progress} turns: ${JSON.stringify(answer.structuredContent)}`);

// Cancellation: the SDK sends notifications/cancelled; the session goes on.
const abort = new AbortController();
const cancelled = client.callTool(
  { name: 'incident-analyst', arguments: { task, incident_dir: incident } },
  undefined,
  { signal: abort.signal, onprogress: () => {} },
);
setTimeout(() => abort.abort('test'), 20);
await assert.rejects(cancelled);
await client.ping();
console.log(`${mode}: a cancelled call, then ping answered`);

await client.close();
console.log(`${mode}: ok`);
