#!/usr/bin/env node
// A scripted MCP server over stdio that misbehaves on purpose, for the bridge's self-test: each
// tool is one way an MCP server goes wrong. With --stubborn it ignores the end of its input and
// SIGTERM, so only SIGKILL ends it. Raw JSON-RPC, one message a line, no SDK.
import { spawn } from 'node:child_process';

const stubborn = process.argv.includes('--stubborn');
const cancelled = [];
let calls = 0;
const object = { type: 'object', properties: {} };
const tools = [
  { name: 'die', description: 'Sends one progress notification, then exits with status 7 mid-call.', inputSchema: object },
  { name: 'twice', description: 'Answers the call twice, with two different results.', inputSchema: object },
  { name: 'silent', description: 'Never answers.', inputSchema: object, annotations: { readOnlyHint: true } },
  { name: 'fail', description: 'Answers a result with isError.', inputSchema: object, annotations: { readOnlyHint: true } },
  { name: 'refuse', description: 'Answers JSON-RPC error -32602.', inputSchema: object, annotations: { readOnlyHint: true } },
  {
    name: 'spawn',
    description: 'Starts a child process that ignores SIGTERM and answers its pid.',
    inputSchema: object,
    annotations: { readOnlyHint: true },
  },
  { name: 'count', description: 'Answers how many times it was called.', inputSchema: object, annotations: { readOnlyHint: true } },
  {
    name: 'cancellations',
    description: 'Answers the request ids of the notifications/cancelled it received.',
    inputSchema: object,
    annotations: { readOnlyHint: true },
  },
];

const send = (message) => process.stdout.write(`${JSON.stringify(message)}\n`);
const result = (id, value) => send({ jsonrpc: '2.0', id, result: value });
const text = (t) => ({ content: [{ type: 'text', text: t }] });

function call(id, name, meta) {
  switch (name) {
    case 'die':
      if (meta?.progressToken !== undefined)
        send({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: meta.progressToken, progress: 1, total: 2 } });
      setTimeout(() => process.exit(7), 50);
      return;
    case 'twice':
      result(id, text('first'));
      result(id, text('second'));
      return;
    case 'silent':
      return;
    case 'fail':
      result(id, { ...text('the tool failed as scripted'), isError: true });
      return;
    case 'refuse':
      send({ jsonrpc: '2.0', id, error: { code: -32602, message: 'the arguments are refused as scripted' } });
      return;
    case 'spawn': {
      const child = spawn(process.execPath, ['-e', "process.on('SIGTERM', () => {}); setInterval(() => {}, 1000)"], { stdio: 'ignore' });
      result(id, { ...text(`child ${child.pid}`), structuredContent: { pid: child.pid, server: process.pid } });
      return;
    }
    case 'count':
      calls++;
      result(id, { ...text(String(calls)), structuredContent: { calls } });
      return;
    case 'cancellations':
      result(id, { ...text(cancelled.join(' ')), structuredContent: { cancelled } });
      return;
    default:
      send({ jsonrpc: '2.0', id, error: { code: -32602, message: `no tool ${name}` } });
  }
}

function handle(message) {
  const { id, method, params } = message;
  if (method === 'initialize')
    result(id, {
      protocolVersion: params.protocolVersion,
      capabilities: { tools: {} },
      serverInfo: { name: 'misbehaving', version: '0.0.1' },
    });
  else if (method === 'tools/list') result(id, { tools });
  else if (method === 'tools/call') call(id, params.name, params._meta);
  else if (method === 'notifications/cancelled') cancelled.push(params.requestId);
  else if (id !== undefined && method !== undefined) send({ jsonrpc: '2.0', id, error: { code: -32601, message: `no method ${method}` } });
}

let buffer = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk) => {
  buffer += chunk;
  for (let nl = buffer.indexOf('\n'); nl >= 0; nl = buffer.indexOf('\n')) {
    const line = buffer.slice(0, nl);
    buffer = buffer.slice(nl + 1);
    if (line.trim() !== '') handle(JSON.parse(line));
  }
});
if (stubborn) {
  process.on('SIGTERM', () => {});
  setInterval(() => {}, 1000);
} else process.stdin.on('end', () => process.exit(0));
