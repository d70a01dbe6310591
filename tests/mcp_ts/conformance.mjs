// The official TypeScript MCP client (@modelcontextprotocol/sdk) against Quire's /mcp: every case of the plan that
// tests/integration/test_mcp_client_conformance.py writes to stdin, each asserted to be accepted by the SDK (its
// callTool checks any structuredContent against the tool's declared outputSchema and throws on a mismatch) and to
// carry the right content: a result's ids, a refusal's sentence and JSON as the HTTP surface answers them.
//
// Environment: QUIRE_MCP_URL (the endpoint), QUIRE_MCP_TOKEN (a writer's bearer token), QUIRE_MCP_READER_TOKEN (a
// reader's). The last line of stdout is the summary as JSON; the exit code is 1 when any case failed.

import { deepStrictEqual } from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const plan = JSON.parse(await readStdin());
const tokens = { writer: required("QUIRE_MCP_TOKEN"), reader: required("QUIRE_MCP_READER_TOKEN") };
const url = new URL(required("QUIRE_MCP_URL"));

const clients = {};
let listed = 0;
for (const [caller, token] of Object.entries(tokens)) {
  const client = new Client({ name: "quire-conformance", version: "1.0.0" });
  await client.connect(
    new StreamableHTTPClientTransport(url, { requestInit: { headers: { Authorization: `Bearer ${token}` } } }),
  );
  // Listing is what makes the client check results: it compiles each tool's outputSchema from this list.
  const { tools } = await client.listTools();
  deepStrictEqual(
    tools.map((tool) => tool.name),
    plan.tools,
  );
  for (const tool of tools) {
    if (tool.outputSchema?.type !== "object") throw new Error(`${tool.name} declares no object outputSchema`);
  }
  listed = tools.length;
  clients[caller] = client;
}

const summary = { listed, results: 0, refusals: 0, failed: [] };
for (const item of plan.cases) {
  try {
    const result = await clients[item.caller].callTool({ name: item.tool, arguments: item.arguments });
    if (item.error === null) {
      checkResult(item, result);
      summary.results += 1;
    } else {
      checkRefusal(item, result);
      summary.refusals += 1;
    }
  } catch (error) {
    summary.failed.push(`${item.tool} (${item.label}): ${error.message}`);
  }
}
await Promise.all(Object.values(clients).map((client) => client.close()));
console.log(JSON.stringify(summary));
process.exit(summary.failed.length ? 1 : 0);

function checkResult(item, result) {
  if (result.isError) throw new Error(`refused: ${texts(result).join(" | ")}`);
  if (result.structuredContent === undefined) throw new Error("a result without structuredContent");
  const [text, ...more] = result.content;
  if (text?.type !== "text" || more.length) throw new Error("a result is one text block");
  deepStrictEqual(JSON.parse(text.text), result.structuredContent, "the text block is the structured content");
  for (const [path, value] of Object.entries(item.expect)) {
    const seen = path.split(".").reduce((node, key) => node?.[key], result.structuredContent);
    deepStrictEqual(seen, value, `${path} of the result`);
  }
}

function checkRefusal(item, result) {
  if (result.isError !== true) throw new Error(`not refused: ${texts(result).join(" | ")}`);
  if ("structuredContent" in result) throw new Error("a refusal carries structuredContent");
  const [sentence, refusalJson, ...more] = texts(result);
  if (more.length || refusalJson === undefined) throw new Error("a refusal is two text blocks");
  const refusal = JSON.parse(refusalJson);
  deepStrictEqual(sentence, refusal.message, "the first block is the refusal's sentence");
  deepStrictEqual(refusal.error, item.error, "the refusal's code");
  const expected = item.refusal;
  if (expected.message.includes(plan.resetsAt)) {
    // A limit's sentence names the time left until it resets, which moves with the clock.
    const prefix = expected.message.split(plan.resetsAt)[0];
    if (!refusal.message.startsWith(prefix)) throw new Error(`the sentence: ${refusal.message}`);
    const { message: _m, retryAfterSeconds: _r, ...rest } = refusal;
    const { message: _em, retryAfterSeconds: _er, ...expectedRest } = expected;
    deepStrictEqual(rest, expectedRest, "the refusal as POST /v1/tools answers it");
  } else {
    deepStrictEqual(refusal, expected, "the refusal as POST /v1/tools answers it");
  }
}

function texts(result) {
  return (result.content ?? []).map((block) => (block.type === "text" ? block.text : `(${block.type})`));
}

function required(name) {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
}

async function readStdin() {
  let input = "";
  for await (const chunk of process.stdin) input += chunk;
  return input;
}
