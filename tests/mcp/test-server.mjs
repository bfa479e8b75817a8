#!/usr/bin/env node
// A small stdio MCP server on the official SDK, for tests/suite/mcp.rs:
// things the reference server cannot do on demand.
//
// - On start, when MCP_PID_FILE is set, it starts a helper (`sleep 300`)
//   and writes "SERVER_PID HELPER_PID" there, so a test can check that
//   the whole process tree is gone after leash exits.
// - Tools: `env` (its environment as JSON), `die` (the process exits in
//   the middle of the call), `slow` (answers after a minute, or never when
//   the run is stopped first), `fail` (an isError result).
import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
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
server.setRequestHandler(CallToolRequestSchema, async (request) => {
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
    case "fail":
      return { ...text(`no weather for ${request.params.arguments.city}`), isError: true };
    default:
      return { ...text(`unknown tool ${request.params.name}`), isError: true };
  }
});
await server.connect(new StdioServerTransport());
