// Lists the tools of an MCP server and calls one, with the official MCP
// TypeScript SDK client, the way a model's provider reaches Toolgate's MCP
// face. internal/gateway's TestFace_TypeScriptSDKClient runs it (and
// cmd/api's TestAgentFace_ThirdPartyClients, e2e/agent-held.spec.ts):
//
//   node scripts/mcp-face-client.mjs <url> <token> <tool> '<arguments JSON>'
//
// It prints {"tools": [names], "result": CallToolResult} as one JSON line.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const [url, token, tool, args] = process.argv.slice(2);
const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
});
const client = new Client({ name: 'ts-provider', version: '1.0.0' });
await client.connect(transport);
const listed = await client.listTools();
const result = await client.callTool({ name: tool, arguments: JSON.parse(args) });
console.log(JSON.stringify({ tools: listed.tools.map((t) => t.name), result }));
await client.close();
