// Lists the tools of an MCP server and calls one through Toolgate's MCP
// face with the OpenAI Agents SDK's MCP client (MCPServerStreamableHttp),
// the way an agent built on it would. internal/gateway's
// TestFace_OpenAIAgentsSDK runs it (and cmd/api's
// TestAgentFace_ThirdPartyClients, e2e/agent-held.spec.ts):
//
//   node scripts/agents-face-client.mjs <url> <token> <tool> '<arguments JSON>'
//
// It prints {"tools": [names], "result": CallToolResult} as one JSON line.
import { MCPServerStreamableHttp } from '@openai/agents';

const [url, token, tool, args] = process.argv.slice(2);
const server = new MCPServerStreamableHttp({
  url,
  name: 'toolgate',
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
  cacheToolsList: false,
});
await server.connect();
try {
  const tools = await server.listTools();
  const result = await server.callToolResult(tool, JSON.parse(args));
  console.log(JSON.stringify({ tools: tools.map((t) => t.name), result }));
} finally {
  await server.close();
}
