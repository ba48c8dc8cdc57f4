#!/usr/bin/env node
// An MCP client on the official TypeScript SDK, for our interoperability tests.
//
//   node ts-client.mjs [options] http  URL            Streamable HTTP (e.g. http://127.0.0.1:PORT/mcp)
//   node ts-client.mjs [options] sse   URL            legacy HTTP+SSE (e.g. http://127.0.0.1:PORT/sse)
//   node ts-client.mjs [options] stdio -- CMD [ARG...]
//
// Options:
//   --list               list tools, prompts and resources (those the server has)
//   --call NAME          call a tool; --args JSON gives its arguments, --meta JSON its _meta
//   --progress           ask for progress notifications on the call
//   --elicit ANSWER      answer elicitation requests: accept:JSON | decline | cancel
//   --sample TEXT        answer sampling requests with TEXT
//   --timeout MS         give up after MS milliseconds (default 30000)
//
// Prints one JSON document: server, protocolVersion, capabilities, [tools, prompts, resources],
// [result | error], progress, elicitations, samplings, notifications.
// Exit: 0 ok, 1 connection/protocol error or timeout, 2 the tool answered isError: true, 3 usage.
// The SDK is imported from $MCP_CLIENT_DEPS/node_modules (see tests/clients/node.py).
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const FLAGS = new Set(['--call', '--args', '--meta', '--elicit', '--sample', '--timeout']);
const SWITCHES = new Set(['--list', '--progress']);

function usage(problem) {
  console.error(`ts-client: ${problem}`);
  console.error('usage: ts-client.mjs [--list] [--call NAME [--args JSON] [--meta JSON] [--progress]]');
  console.error('       [--elicit accept:JSON|decline|cancel] [--sample TEXT] [--timeout MS] http|sse URL | stdio -- CMD...');
  process.exit(3);
}

function parseArgs(argv) {
  const options = { timeout: '30000' };
  const positional = [];
  let command = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--') { command = argv.slice(i + 1); break; }
    if (FLAGS.has(arg)) {
      if (i + 1 >= argv.length) usage(`${arg} needs a value`);
      options[arg.slice(2)] = argv[++i];
    } else if (SWITCHES.has(arg)) options[arg.slice(2)] = true;
    else if (arg.startsWith('--')) usage(`unknown option ${arg}`);
    else positional.push(arg);
  }
  const [kind, url] = positional;
  if (!['http', 'sse', 'stdio'].includes(kind)) usage('the transport must be http, sse or stdio');
  if (kind === 'stdio' ? command.length === 0 : !url) usage(kind === 'stdio' ? 'stdio needs -- CMD' : `${kind} needs a URL`);
  return { options, kind, url, command };
}

function json(text, what) {
  try { return JSON.parse(text); } catch (e) { usage(`${what} is not JSON: ${e.message}`); }
}

function elicitAnswer(spec) {
  if (spec === 'decline' || spec === 'cancel') return { action: spec };
  if (spec.startsWith('accept:')) return { action: 'accept', content: json(spec.slice(7), '--elicit accept:') };
  if (spec === 'accept') return { action: 'accept', content: {} };
  usage('--elicit takes accept:JSON, decline or cancel');
}

async function loadSdk() {
  const root = process.env.MCP_CLIENT_DEPS || process.cwd();
  const base = join(root, 'node_modules', '@modelcontextprotocol', 'sdk', 'dist', 'esm');
  if (!existsSync(base)) usage(`@modelcontextprotocol/sdk is not installed under ${root}`);
  const load = (path) => import(pathToFileURL(join(base, path)).href);
  return {
    ...(await load('client/index.js')),
    ...(await load('types.js')),
    http: (await load('client/streamableHttp.js')).StreamableHTTPClientTransport,
    sse: (await load('client/sse.js')).SSEClientTransport,
    stdio: (await load('client/stdio.js')).StdioClientTransport,
  };
}

function transportFor(sdk, kind, url, command) {
  if (kind === 'http') return new sdk.http(new URL(url));
  if (kind === 'sse') return new sdk.sse(new URL(url));
  return new sdk.stdio({ command: command[0], args: command.slice(1), stderr: 'inherit' });
}

async function listAll(client, capabilities, report) {
  if (capabilities.tools) report.tools = (await client.listTools()).tools;
  if (capabilities.prompts) report.prompts = (await client.listPrompts()).prompts;
  if (capabilities.resources) report.resources = (await client.listResources()).resources;
}

async function main() {
  const { options, kind, url, command } = parseArgs(process.argv.slice(2));
  const sdk = await loadSdk();
  const report = { progress: [], elicitations: [], samplings: [], notifications: [] };
  const capabilities = {};
  if (options.elicit) capabilities.elicitation = {};
  if (options.sample) capabilities.sampling = {};
  const client = new sdk.Client({ name: 'apcore-mcp-ts-client', version: '1.0.0' }, { capabilities });
  if (options.elicit) {
    const answer = elicitAnswer(options.elicit);
    client.setRequestHandler(sdk.ElicitRequestSchema, async (request) => {
      report.elicitations.push(request.params);
      return answer;
    });
  }
  if (options.sample) {
    client.setRequestHandler(sdk.CreateMessageRequestSchema, async (request) => {
      report.samplings.push(request.params);
      return { role: 'assistant', content: { type: 'text', text: options.sample }, model: 'ts-client' };
    });
  }
  client.fallbackNotificationHandler = async (notification) => { report.notifications.push(notification.method); };
  // Progress is recorded by our own handler, not through the call's onprogress: the SDK runs
  // notification handlers a microtask late and forgets the call's progress token as soon as the
  // response is read, so progress arriving in the same read as the response would be lost.
  client.setNotificationHandler(sdk.ProgressNotificationSchema, async (notification) => {
    report.progress.push(notification.params);
  });

  const timer = setTimeout(() => {
    console.error(`ts-client: timeout after ${options.timeout} ms`);
    process.exit(1);
  }, Number(options.timeout));
  timer.unref();

  const transport = transportFor(sdk, kind, url, command);
  let code = 0;
  try {
    await client.connect(transport);
    report.server = client.getServerVersion();
    report.protocolVersion = transport.protocolVersion ?? null;
    report.capabilities = client.getServerCapabilities() ?? {};
    report.instructions = client.getInstructions() ?? null;
    if (options.list) await listAll(client, report.capabilities, report);
    if (options.call) {
      const params = { name: options.call, arguments: json(options.args ?? '{}', '--args') };
      if (options.meta) params._meta = json(options.meta, '--meta');
      const requestOptions = { timeout: Number(options.timeout) };
      if (options.progress) requestOptions.onprogress = () => {}; // asks for a progress token
      try {
        report.result = await client.callTool(params, undefined, requestOptions);
        if (report.result.isError) code = 2;
      } catch (error) {
        if (!(error instanceof sdk.McpError)) throw error;
        report.error = { code: error.code, message: error.message, data: error.data ?? null };
        code = 1;
      }
    }
  } catch (error) {
    report.failure = String(error?.message ?? error);
    code = 1;
  }
  console.log(JSON.stringify(report, null, 2));
  await client.close().catch(() => {});
  process.exit(code);
}

await main();
