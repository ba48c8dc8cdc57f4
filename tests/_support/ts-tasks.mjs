#!/usr/bin/env node
// The official TypeScript SDK's (experimental, 2025-11-25) tasks against our server, for
// tests/tasks/test_tasks_ts.py:
//
//   node ts-tasks.mjs URL TOOL ARGS_JSON
//
// Lists the tools (the SDK reads execution.taskSupport), runs TOOL as a task with
// client.experimental.tasks.callToolStream (task created, status polled, result fetched), then
// starts TOOL again with ARGS_JSON's `steps` multiplied a hundredfold and cancels it with
// cancelTask. Prints one JSON document: protocolVersion, capabilities, taskSupport, stream
// (each message's type and task status), result, cancelled (cancelTask's answer), after
// (getTask after the cancel). Exit 0 ok, 1 an error (printed as `error`). The SDK is imported
// from $MCP_CLIENT_DEPS/node_modules (see tests/_support/node.py).
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const [url, tool, argsJson] = process.argv.slice(2);
const base = join(process.env.MCP_CLIENT_DEPS || process.cwd(), 'node_modules', '@modelcontextprotocol', 'sdk', 'dist', 'esm');
const load = (path) => import(pathToFileURL(join(base, path)).href);
const { Client } = await load('client/index.js');
const { StreamableHTTPClientTransport } = await load('client/streamableHttp.js');

const report = {};
const client = new Client({ name: 'ts-tasks', version: '1.0.0' }, { capabilities: {} });
const deadline = setTimeout(() => { report.error = 'timed out'; finish(1); }, 30000);

async function finish(code) {
  clearTimeout(deadline);
  process.stdout.write(JSON.stringify(report));
  await client.close().catch(() => {});
  process.exit(code);
}

try {
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  report.protocolVersion = client.transport.protocolVersion ?? null;
  report.capabilities = client.getServerCapabilities();
  const { tools } = await client.listTools();
  report.taskSupport = Object.fromEntries(tools.map((t) => [t.name, t.execution?.taskSupport ?? null]));
  const args = JSON.parse(argsJson);
  report.stream = [];
  for await (const message of client.experimental.tasks.callToolStream({ name: tool, arguments: args }, undefined, { task: { ttl: 60000 } })) {
    report.stream.push({ type: message.type, status: message.task?.status ?? null });
    if (message.type === 'result') report.result = message.result;
    if (message.type === 'error') report.streamError = String(message.error?.message ?? message.error);
  }
  const long = { ...args, steps: (args.steps ?? 1) * 100 };
  for await (const message of client.experimental.tasks.callToolStream({ name: tool, arguments: long }, undefined, { task: { ttl: 60000 } })) {
    if (message.type === 'taskCreated') {
      report.cancelled = await client.experimental.tasks.cancelTask(message.task.taskId);
      report.after = await client.experimental.tasks.getTask(message.task.taskId);
      break;
    }
  }
  await finish(0);
} catch (error) {
  report.error = String(error?.message ?? error);
  await finish(1);
}
