/**
 * The systems a scenario compares, each behind one small interface: an echo call, optionally a
 * stream of n events, its process id when it runs in a child, and a bounded close. TAP is the
 * reference client talking to the reference agent; the floor is bare NDJSON over the same
 * transport; the peers, the MCP TypeScript SDK and vscode-jsonrpc, are in peer-systems.ts.
 */
import { spawn } from 'node:child_process';
import WebSocket from 'ws';
import { createAgent, type Agent } from '../../dist/reference/agent/index.js';
import { connect, type ConnectOptions, type TapClient, type WireEntry } from '../../dist/reference/client/index.js';
import { connectWebSocket, createMemoryPair, spawnStdioTransport, type Transport } from '../../dist/reference/transports/index.js';
import { answer } from '../peers/bare-protocol.ts';
import { benchAgentOptions, REQUESTER_ID } from './agent-options.ts';
import { operated } from './operated.ts';
import { spawnScript, nodeArgs, watchLines, within, type LineChild } from './children.ts';
import type { Call } from './measure.ts';
import { peer, ROOT } from './paths.ts';

export type TransportKind = 'stdio' | 'websocket' | 'memory';

/** One system under measurement. */
export interface System {
  id: string;
  name: string;
  /** One echo round trip with input { text, n: i }. */
  call: Call;
  /** Asks for `count` output events and resolves with how many arrived, once the stream ended. */
  stream?(count: number): Promise<number>;
  /** The process that serves the calls, when it is a child. */
  pid?: number;
  close(): Promise<void>;
}

/** The echo input of call `i`: the same for every system. */
export const echoInput = (i: number): { text: string; n: number } => ({ text: 'hand this back, please', n: i });

const CLOSE_MS = 5000;

/** Closes quietly within a bound; a system that will not close is left to the kill that follows. */
export async function closeWithin(what: string, close: () => Promise<unknown>): Promise<void> {
  await within(close(), CLOSE_MS, `closing ${what}`).catch(() => {});
}

// ---- TAP ----

/** Opens a TAP session on `transport` with room for `maxTasks` tasks. */
export function tapConnect(
  transport: Transport,
  maxTasks: number,
  trace?: (e: WireEntry) => void,
  extra: Pick<ConnectOptions, 'telemetry'> = {},
): Promise<TapClient> {
  return connect(transport, {
    agentId: REQUESTER_ID,
    params: { max_concurrent_tasks: maxTasks },
    trace,
    ...extra,
  });
}

/** How a TAP system submits its echo tasks: as TAP 1.0 does (four messages), or quiet (TAP 1.1, two). */
export interface TapMode {
  quiet?: boolean;
  /** Operated as in production: OpenTelemetry spans on both sides and the agent's audit trail (memory only). */
  ops?: boolean;
  /** The agent built with `metrics: false`, counting nothing per task (memory only). */
  uncounted?: boolean;
}

export const UNCOUNTED_NAME = 'TAP with the agent counting nothing for /metrics (metrics: false)';

export const OPS_NAME = 'TAP with OpenTelemetry spans on both sides and an audit file';

/** The name of the quiet TAP system. */
export const QUIET_NAME = 'TAP 1.1 quiet task (reference client + reference agent)';

function tapSystem(client: TapClient, pid: number | undefined, close: () => Promise<void>, mode: TapMode = {}): System {
  const options = mode.quiet ? { quiet: true } : {};
  return {
    id: mode.quiet ? 'quiet' : 'tap',
    name: mode.quiet ? QUIET_NAME : 'TAP (reference client + reference agent)',
    pid,
    async call(i) {
      const result = await client.submit('tap.test.echo', echoInput(i), options).result;
      if (result.status !== 'completed') throw new Error(`tap.test.echo ended ${result.status}: ${JSON.stringify(result.error)}`);
      return result;
    },
    async stream(count) {
      const handle = client.submit('tap.test.stream', { count });
      let n = 0;
      for await (const event of handle.events) if (event.payload.kind === 'output') n++;
      const result = await handle.result;
      if (result.status !== 'completed') throw new Error(`tap.test.stream ended ${result.status}: ${JSON.stringify(result.error)}`);
      return n;
    },
    close,
  };
}

/** The reference agent in a child process over stdio, and the reference client. */
export async function tapStdio(maxTasks = 100_000, mode: TapMode = {}): Promise<System> {
  const transport = spawnStdioTransport(process.execPath, nodeArgs(peer('tap-agent.ts'), ['--max-tasks', String(maxTasks)]), {
    cwd: ROOT,
    stderr: 'pipe',
    closeGraceMs: 3000,
  });
  const client = await tapConnect(transport, maxTasks);
  return tapSystem(
    client,
    transport.child?.pid,
    async () => {
      await closeWithin('the TAP client', () => client.close());
      transport.kill('SIGKILL');
    },
    mode,
  );
}

/** The reference agent in a child process serving WebSocket on 127.0.0.1, and the reference client. */
export async function tapWebSocket(maxTasks = 100_000): Promise<System> {
  const agent = await listeningChild(
    peer('tap-agent.ts'),
    ['--listen', 'ws://127.0.0.1:0', '--max-tasks', String(maxTasks)],
    'the TAP agent',
  );
  try {
    const client = await tapConnect(await connectWebSocket(agent.url), maxTasks);
    return tapSystem(client, agent.child.child.pid, async () => {
      await closeWithin('the TAP client', () => client.close());
      await agent.child.stop();
    });
  } catch (err) {
    await agent.child.stop();
    throw err;
  }
}

/** The reference agent in this process on an in-memory pair, and the reference client. */
export async function tapMemory(
  maxTasks = 100_000,
  trace?: (e: WireEntry) => void,
  mode: TapMode = {},
): Promise<System & { agent: Agent }> {
  const ops = mode.ops ? await operated() : undefined;
  const agent = createAgent({ ...benchAgentOptions(maxTasks), ...ops?.agent, ...(mode.uncounted ? { metrics: false } : {}) });
  const [agentEnd, clientEnd] = createMemoryPair();
  agent.attach(agentEnd);
  const client = await tapConnect(clientEnd, maxTasks, trace, ops?.client);
  const system = tapSystem(
    client,
    undefined,
    async () => {
      await closeWithin('the TAP client', () => client.close());
      await closeWithin('the TAP agent', () => agent.shutdown());
      await ops?.close();
    },
    mode,
  );
  const named = mode.ops ? { id: 'ops', name: OPS_NAME } : mode.uncounted ? { id: 'uncounted', name: UNCOUNTED_NAME } : {};
  return { ...system, ...named, agent };
}

// ---- the bare floor ----

/** The requester side of the bare protocol: correlates answers by id, counts stream events. */
export class BareRequester {
  private nextId = 1;
  private readonly pending = new Map<number, (line: Record<string, unknown>) => void>();
  private streamed = 0;
  /** The template streamed events are made of (a TAP task.event, so the bytes match). */
  template: Record<string, unknown> = { index: 0 };

  constructor(private readonly sendLine: (text: string) => void) {}

  /** Handles one inbound line: every line is parsed, as any JSON protocol must. */
  receive(text: string): void {
    const msg = JSON.parse(text) as Record<string, unknown>;
    const id = msg.id;
    if (typeof id !== 'number') {
      this.streamed++;
      return;
    }
    // The answers of a task before its last are read and passed over; the last settles it.
    if (typeof msg.n === 'number' && msg.n < this.answers) return;
    const resolve = this.pending.get(id);
    this.pending.delete(id);
    resolve?.(msg);
  }

  /** A TAP task.request the calls copy once `useTapShape` has run: the floor then sends TAP's messages of a task. */
  private request?: Record<string, unknown>;
  /** How many answers a task gets once `useTapShape` has run. */
  private answers = 0;

  call(i: number): Promise<unknown> {
    const id = this.nextId++;
    return new Promise((resolve) => {
      this.pending.set(id, resolve);
      this.sendLine(
        JSON.stringify(this.request ? { ...this.request, id, four: true, payload: echoInput(i) } : { id, payload: echoInput(i) }),
      );
    });
  }

  /**
   * Makes every later `call` a task shaped like TAP's (see bare-protocol.ts): `request` out, and
   * `answers` back, the last of which carries the echoed payload.
   */
  async useTapShape(request: Record<string, unknown>, answers: Record<string, unknown>[]): Promise<void> {
    const id = this.nextId++;
    const templates = answers.map((a, i) => (i === answers.length - 1 ? asTemplate(a) : a));
    await new Promise((resolve) => {
      this.pending.set(id, resolve);
      this.sendLine(JSON.stringify({ id, templates }));
    });
    this.request = request;
    this.answers = answers.length;
  }

  async stream(count: number): Promise<number> {
    const id = this.nextId++;
    this.streamed = 0;
    await new Promise((resolve) => {
      this.pending.set(id, resolve);
      this.sendLine(JSON.stringify({ id, stream: count, template: this.template }));
    });
    return this.streamed;
  }
}

/** The messages of one TAP echo task as the reference sent them, parsed, and those of one quiet echo task. */
export interface TapTaskTexts {
  request: Record<string, unknown>;
  accepted: Record<string, unknown>;
  event: Record<string, unknown>;
  result: Record<string, unknown>;
  quiet: { request: Record<string, unknown>; result: Record<string, unknown> };
}

/** The result as the floor's template: without its payload, which the floor fills with the echoed input. */
function asTemplate(result: Record<string, unknown>): Record<string, unknown> {
  const { payload: _payload, ...rest } = result;
  return rest;
}

/** The four messages of one tap.test.echo task through the reference client and agent. */
export async function captureTapTask(): Promise<TapTaskTexts> {
  const seen: Record<string, unknown>[] = [];
  const record = (entry: WireEntry) => {
    if (entry.text.includes('"type":"task.')) seen.push(JSON.parse(entry.text) as Record<string, unknown>);
  };
  const tap = await tapMemory(16, record);
  try {
    await tap.call(1);
  } finally {
    await tap.close();
  }
  const full = seen.splice(0);
  const quiet = await tapMemory(16, record, { quiet: true });
  try {
    await quiet.call(1);
  } finally {
    await quiet.close();
  }
  const find = (list: Record<string, unknown>[], type: string, what = 'a tap.test.echo task') => {
    const msg = list.find((m) => m.type === type);
    if (!msg) throw new Error(`no ${type} was seen in ${what}`);
    return msg;
  };
  const quietRequest = find(seen, 'task.request', 'a quiet tap.test.echo task');
  if ((quietRequest.payload as { quiet?: unknown }).quiet !== true)
    throw new Error('the quiet echo task was not requested quiet: the session is not of TAP 1.1');
  return {
    request: find(full, 'task.request'),
    accepted: find(full, 'task.accepted'),
    event: find(full, 'task.event'),
    result: find(full, 'task.result'),
    quiet: { request: quietRequest, result: find(seen, 'task.result', 'a quiet tap.test.echo task') },
  };
}

/** The floor sending TAP's four messages a task, the same sizes within a few bytes. */
export async function bareFour(make: () => Promise<System & { requester: BareRequester }>, task: TapTaskTexts): Promise<System> {
  const bare = await make();
  try {
    await bare.requester.useTapShape(task.request, [task.accepted, task.event, task.result]);
  } catch (err) {
    await bare.close();
    throw err;
  }
  return { ...bare, id: 'bare4', name: "bare NDJSON, TAP's four messages a task (ceiling)" };
}

/** The floor sending the quiet flow's two messages a task (TAP 1.1): the captured quiet task.request out, its task.result back. */
export async function bareQuiet(make: () => Promise<System & { requester: BareRequester }>, task: TapTaskTexts): Promise<System> {
  const bare = await make();
  try {
    await bare.requester.useTapShape(task.quiet.request, [task.quiet.result]);
  } catch (err) {
    await bare.close();
    throw err;
  }
  return { ...bare, id: 'bare2', name: "bare NDJSON, the quiet task's two messages (quiet ceiling)" };
}

export function bareSystem(
  requester: BareRequester,
  pid: number | undefined,
  close: () => Promise<void>,
): System & { requester: BareRequester } {
  return {
    id: 'bare',
    name: 'bare NDJSON echo (floor)',
    pid,
    call: (i) => requester.call(i),
    stream: (count) => requester.stream(count),
    close,
    requester,
  };
}

/** Splits a string stream into lines. */
function onLines(stream: NodeJS.ReadableStream, handle: (line: string) => void): void {
  let buf = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk: string) => {
    buf += chunk;
    let i;
    let start = 0;
    while ((i = buf.indexOf('\n', start)) >= 0) {
      handle(buf.slice(start, i));
      start = i + 1;
    }
    buf = buf.slice(start);
  });
}

/** The bare floor over stdio: a child that answers NDJSON lines. */
export async function bareStdio(): Promise<System & { requester: BareRequester }> {
  const child = spawn(process.execPath, nodeArgs(peer('bare-stdio.ts')), { cwd: ROOT, stdio: ['pipe', 'pipe', 'pipe'] });
  const lines = watchLines(child);
  const requester = new BareRequester((text) => child.stdin.write(text + '\n'));
  child.stdout.removeAllListeners('data');
  onLines(child.stdout, (line) => requester.receive(line));
  await new Promise<void>((resolve, reject) => {
    child.once('spawn', resolve);
    child.once('error', reject);
  });
  await within(requester.call(0), 30_000, 'the bare stdio child answering');
  return bareSystem(requester, child.pid, () => lines.stop());
}

/** The bare floor over WebSocket: a ws server in a child, a ws client here. */
export async function bareWebSocket(): Promise<System & { requester: BareRequester }> {
  const server = await listeningChild(peer('bare-ws.ts'), [], 'the bare ws server');
  const ws = await openBareSocket(server.url);
  const requester = new BareRequester((text) => ws.send(text));
  ws.on('message', (data) => requester.receive(data.toString()));
  return bareSystem(requester, server.child.child.pid, async () => {
    ws.terminate();
    await server.child.stop();
  });
}

/** Opens a ws connection the way the TAP client does (subprotocol tap.v1, no compression). */
export function openBareSocket(url: string): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, ['tap.v1'], { perMessageDeflate: false, skipUTF8Validation: true });
    ws.once('open', () => resolve(ws));
    ws.once('error', reject);
  });
}

/** The bare floor over the in-memory pair of reference/transports. */
export async function bareMemory(): Promise<System & { requester: BareRequester }> {
  const [serverEnd, clientEnd] = createMemoryPair();
  const decoder = new TextDecoder();
  // Each memory pair keeps its own templates: several floors share this process.
  const session = { replies: [] };
  // A frame's text, as the reference's decoder reads it: the pair carries a string as it is.
  const textOf = (frame: { text?: string; bytes: Uint8Array }) => frame.text ?? decoder.decode(frame.bytes);
  serverEnd.onmessage = (frame) => void answer(textOf(frame), (text) => serverEnd.send(text), session);
  const requester = new BareRequester((text) => void clientEnd.send(text));
  clientEnd.onmessage = (frame) => requester.receive(textOf(frame));
  await serverEnd.start();
  await clientEnd.start();
  return bareSystem(requester, undefined, () => clientEnd.close());
}

/** A child that prints its URL on stdout once it listens. */
export async function listeningChild(file: string, args: string[], what: string): Promise<{ url: string; child: LineChild }> {
  const child = spawnScript(file, args);
  try {
    const url = await child.line((l) => l.startsWith('ws://'), 30_000, `${what} listening`);
    return { url: url.trim(), child };
  } catch (err) {
    await child.stop();
    throw err;
  }
}
