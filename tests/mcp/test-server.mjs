#!/usr/bin/env node
// A small stdio MCP server on the official SDK, for tests/suite/mcp.rs:
// things the reference server cannot do on demand.
//
// - On start, when MCP_PID_FILE is set, it starts a helper (`sleep 300`)
//   and writes "SERVER_PID HELPER_PID" there, so a test can check that
//   the whole process tree is gone after leash exits.
// - Tools: `env` (its environment as JSON), `die` (the process exits in
//   the middle of the call), `slow` (answers after a minute, or never when
//   the run is stopped first), `fail` (an isError result), `big` (a text
//   of BIG_BYTES bytes, 17 MiB by default: past leash's cap on one
//   message), `trace` (the call's `params._meta` and, over HTTP, its
//   request's `traceparent` header, as JSON).
// - Transport: stdio; or, when MCP_HTTP is "sse" or "json", the SDK's
//   streamable HTTP transport on a free loopback port (printed as
//   "listening on port N" on stderr), answering POSTs with an SSE stream
//   or with one JSON body.
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import {
  CallToolRequestSchema,
  ListToolsRequestSchema,
} from "@modelcontextprotocol/sdk/types.js";

if (process.env.MCP_PID_FILE) {
  const helper = spawn("sleep", ["300"], { stdio: "ignore" });
  writeFileSync(process.env.MCP_PID_FILE, `${process.pid} ${helper.pid}\n`);
}

const empty = { type: "object", properties: {} };
const tools = [
  { name: "env", description: "The server's environment as JSON.", inputSchema: empty },
  { name: "die", description: "Exits in the middle of the call.", inputSchema: empty },
  {
    name: "slow",
    description: "Answers after a minute.",
    inputSchema: empty,
  },
  { name: "big", description: "A text past the cap.", inputSchema: empty },
  { name: "small", description: "A short text.", inputSchema: empty },
  { name: "trace", description: "The call's trace context.", inputSchema: empty },
  {
    name: "fail",
    description: "Reports an error about the city.",
    inputSchema: {
      type: "object",
      properties: { city: { type: "string" } },
      required: ["city"],
    },
  },
];

const server = new Server(
  { name: "leash-test-server", version: "1.0.0" },
  { capabilities: { tools: {} } },
);
server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools }));
server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
  const text = (text) => ({ content: [{ type: "text", text }] });
  switch (request.params.name) {
    case "env":
      return text(JSON.stringify(process.env));
    case "die":
      console.error("dying on purpose");
      process.exit(9);
      break;
    case "slow":
      await new Promise((resolve) => setTimeout(resolve, 60_000));
      return text("slow done");
    case "big":
      return text("x".repeat(Number(process.env.BIG_BYTES || 17 * 1024 * 1024)));
    case "small":
      return text("small");
    case "trace":
      return text(
        JSON.stringify({
          meta: request.params._meta ?? null,
          header: extra?.requestInfo?.headers?.traceparent ?? null,
        }),
      );
    case "fail":
      return { ...text(`no weather for ${request.params.arguments.city}`), isError: true };
    default:
      return { ...text(`unknown tool ${request.params.name}`), isError: true };
  }
});
if (process.env.MCP_HTTP) {
  const transport = new StreamableHTTPServerTransport({
    sessionIdGenerator: () => randomUUID(),
    enableJsonResponse: process.env.MCP_HTTP === "json",
  });
  await server.connect(transport);
  const http = createServer((request, response) => transport.handleRequest(request, response));
  http.listen(0, "127.0.0.1", () => {
    console.error(`listening on port ${http.address().port}`);
  });
} else {
  await server.connect(new StdioServerTransport());
}
