/**
 * The independent Python agent (fixtures/agents/python) speaks TAP 1.0 over stdio: a handshake,
 * the conformance capabilities, cancellation, bad input and shutdown at end of input. Every line
 * it prints is checked against schemas/v1. Self-contained: it spawns the agent with
 * node:child_process and uses no other project module; the last test runs the built tap-conform on it.
 */
import { spawn, spawnSync, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { afterEach, describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const AGENT = join(ROOT, 'fixtures/agents/python/tap_agent.py');
const SCHEMAS = join(ROOT, 'schemas/v1');

const ajv = new Ajv2020({ strict: true, keywords: ['since'], allErrors: true, discriminator: true });
addFormats.default(ajv);
for (const f of readdirSync(SCHEMAS).filter((n) => n.endsWith('.schema.json'))) {
  ajv.addSchema(JSON.parse(readFileSync(join(SCHEMAS, f), 'utf8')));
}
const validateMessage = ajv.getSchema('https://schemas.tap-protocol.org/v1/message.schema.json')!;

type Msg = {
  protocol: string;
  message_id: string;
  type: string;
  source: string;
  target: string;
  timestamp: string;
  session_id?: string;
  task_id?: string;
  reply_to?: string;
  sequence?: number;
  // biome-ignore lint/suspicious/noExplicitAny: a message of any type, read by field after the schema validated it
  payload: Record<string, any>;
};

const SELF = 'python-agent-test';

/** One spawned agent: what it printed, and a requester side that speaks to it. */
class Peer {
  readonly child: ChildProcessWithoutNullStreams;
  /** Every stdout line, raw. */
  readonly lines: string[] = [];
  readonly received: Msg[] = [];
  readonly stderr: string[] = [];
  private cursor = 0;
  private n = 0;
  private buffer = '';
  private waiters: (() => void)[] = [];
  readonly exited: Promise<number | null>;
  sessionId: string | undefined;
  agentId = '*';

  constructor() {
    this.child = spawn('python3', [AGENT], { cwd: ROOT, stdio: ['pipe', 'pipe', 'pipe'] });
    this.child.stdout.setEncoding('utf8');
    this.child.stdout.on('data', (chunk: string) => {
      this.buffer += chunk;
      let nl: number;
      while ((nl = this.buffer.indexOf('\n')) !== -1) {
        const line = this.buffer.slice(0, nl);
        this.buffer = this.buffer.slice(nl + 1);
        this.lines.push(line);
        try {
          this.received.push(JSON.parse(line) as Msg);
        } catch {
          this.received.push({ type: '<not json>' } as Msg);
        }
      }
      for (const w of this.waiters.splice(0)) w();
    });
    this.child.stderr.setEncoding('utf8');
    this.child.stderr.on('data', (c: string) => this.stderr.push(c));
    this.exited = new Promise((resolve) => this.child.on('exit', (code) => resolve(code)));
    this.child.stdin.on('error', () => {});
  }

  /** Writes one raw line. */
  raw(line: string): void {
    this.child.stdin.write(line + '\n');
  }

  /** Sends a message; returns its message_id. */
  send(type: string, payload: Record<string, unknown>, extra: Record<string, unknown> = {}): string {
    const message_id = `t-${++this.n}`;
    const msg: Record<string, unknown> = {
      protocol: 'tap/1.0',
      message_id,
      type,
      source: SELF,
      target: this.agentId,
      timestamp: new Date().toISOString(),
      ...(this.sessionId && type !== 'handshake.init' ? { session_id: this.sessionId } : {}),
      ...extra,
      payload,
    };
    this.raw(JSON.stringify(msg));
    return message_id;
  }

  /**
   * The next message (after those already taken) that matches, within `ms`; before the agent has
   * printed anything the wait includes the interpreter's start-up, which a loaded machine can
   * stretch to seconds, so it is 20 s then.
   */
  async next(pred: (m: Msg) => boolean, timeoutMs?: number): Promise<Msg> {
    const ms = timeoutMs ?? (this.received.length === 0 ? 20_000 : 5000);
    const deadline = Date.now() + ms;
    for (;;) {
      for (let i = this.cursor; i < this.received.length; i++) {
        const m = this.received[i]!;
        if (pred(m)) {
          this.cursor = i + 1;
          return m;
        }
      }
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no matching message within ${ms} ms; got ${JSON.stringify(this.received.slice(this.cursor))}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  /** The messages about one task, in arrival order. */
  stream(taskId: string): Msg[] {
    return this.received.filter((m) => m.task_id === taskId && typeof m.sequence === 'number');
  }

  async handshake(): Promise<Msg> {
    const init = this.send('handshake.init', {
      versions: ['1.0'],
      agent: {
        agent_id: SELF,
        name: 'Python agent test',
        description: 'Drives the Python agent in a unit test.',
        capabilities: [],
        limits: { max_concurrent_tasks: 1, max_task_seconds: 1, max_message_bytes: 1048576 },
      },
      requires: ['tap.test.echo', 'tap.test.stream', 'tap.test.sleep', 'example.absent'],
      params: { heartbeat_ms: 30000, request_timeout_ms: 30000, streaming: true, integrity: 'none' },
    });
    const ack = await this.next((m) => m.reply_to === init);
    expect(ack.type).toBe('handshake.ack');
    this.sessionId = ack.payload.session_id as string;
    this.agentId = ack.source;
    const ready = this.send('handshake.ready', { params: ack.payload.params });
    const go = await this.next((m) => m.reply_to === ready);
    expect(go.type).toBe('handshake.go');
    return ack;
  }

  /** Every printed line that is not a schema-valid TAP message, with the reasons. */
  invalidLines(): { line: string; errors: unknown }[] {
    const bad: { line: string; errors: unknown }[] = [];
    for (const line of this.lines) {
      let value: unknown;
      try {
        value = JSON.parse(line);
      } catch (e) {
        bad.push({ line, errors: String(e) });
        continue;
      }
      if (!validateMessage(value)) bad.push({ line, errors: validateMessage.errors });
    }
    return bad;
  }
}

const peers: Peer[] = [];
function start(): Peer {
  const p = new Peer();
  peers.push(p);
  return p;
}

afterEach(async () => {
  for (const p of peers.splice(0)) {
    expect(p.invalidLines()).toEqual([]);
    if (p.child.exitCode === null) p.child.kill('SIGKILL');
  }
});

/** Checks the task stream invariants: sequences 1..n without gaps, accepted first, one result last. */
function checkStream(msgs: Msg[]): void {
  expect(msgs.map((m) => m.sequence)).toEqual(msgs.map((_, i) => i + 1));
  expect(msgs[0]!.type).toBe('task.accepted');
  expect(msgs.filter((m) => m.type === 'task.result')).toHaveLength(1);
  expect(msgs.at(-1)!.type).toBe('task.result');
}

describe('the Python TAP agent (stdio)', () => {
  it('completes the four-step handshake and grants the conformance capabilities (spec: handshake#ack)', async () => {
    const p = start();
    const ack = await p.handshake();
    expect(ack.payload.version).toBe('1.0');
    expect(ack.payload.session_id).toMatch(/^[A-Za-z0-9_-]{22,}$/);
    expect(ack.session_id).toBe(ack.payload.session_id);
    expect(ack.payload.granted).toEqual(['tap.test.echo', 'tap.test.stream', 'tap.test.sleep']);
    expect(ack.payload.missing).toEqual(['example.absent']);
    expect(ack.payload.params).toMatchObject({ heartbeat_ms: 30000, request_timeout_ms: 30000, streaming: true, integrity: 'none' });
    const names = (ack.payload.agent.capabilities as { name: string }[]).map((c) => c.name).sort();
    expect(names).toEqual([
      'tap.test.counter',
      'tap.test.echo',
      'tap.test.fail',
      'tap.test.guarded',
      'tap.test.plan',
      'tap.test.sleep',
      'tap.test.stream',
    ]);
    expect(ack.payload.agent.durability).toBe('process');
  });

  it('answers a task before the handshake with HANDSHAKE_REQUIRED (spec: handshake#before-go)', async () => {
    const p = start();
    const id = p.send('task.request', { capability: 'tap.test.echo', input: 1 }, { task_id: 'early', target: 'anyone' });
    const err = await p.next((m) => m.reply_to === id);
    expect(err.type).toBe('error');
    expect(err.payload.code).toBe('HANDSHAKE_REQUIRED');
  });

  it('echoes its input as the output of tap.test.echo (spec: conformance#capabilities)', async () => {
    const p = start();
    await p.handshake();
    const input = { text: 'héllo ✓', list: [1, 2.5, null, true], nested: { a: {} } };
    const req = p.send('task.request', { capability: 'tap.test.echo', input }, { task_id: 'echo-1' });
    const accepted = await p.next((m) => m.reply_to === req);
    expect(accepted).toMatchObject({ type: 'task.accepted', task_id: 'echo-1', sequence: 1 });
    expect(accepted.payload.capability).toBe('tap.test.echo');
    const result = await p.next((m) => m.type === 'task.result' && m.task_id === 'echo-1');
    expect(result.payload).toEqual({ status: 'completed', output: input });
    const stream = p.stream('echo-1');
    checkStream(stream);
    expect(stream.map((m) => m.type)).toEqual(['task.accepted', 'task.event', 'task.result']);
    expect(stream[1]!.payload).toEqual({ kind: 'state', state: 'running' });
  });

  it('streams count output events, then completes with {count} (spec: conformance#capabilities)', async () => {
    const p = start();
    await p.handshake();
    p.send('task.request', { capability: 'tap.test.stream', input: { count: 4, interval_ms: 10, chunk: 'ab' } }, { task_id: 'stream-1' });
    const result = await p.next((m) => m.type === 'task.result' && m.task_id === 'stream-1');
    expect(result.payload).toEqual({ status: 'completed', output: { count: 4 } });
    const stream = p.stream('stream-1');
    checkStream(stream);
    const outputs = stream.filter((m) => m.type === 'task.event' && m.payload.kind === 'output').map((m) => m.payload.data);
    expect(outputs).toEqual([0, 1, 2, 3].map((index) => ({ index, chunk: 'ab' })));
  });

  it('cancels a sleeping task: snapshot first, then cancelling, then cancelled (spec: cancellation)', async () => {
    const p = start();
    await p.handshake();
    p.send('task.request', { capability: 'tap.test.sleep', input: { ms: 60000 } }, { task_id: 'sleep-1' });
    await p.next((m) => m.type === 'task.event' && m.task_id === 'sleep-1' && m.payload.state === 'running');
    const cancel = p.send('task.cancel', { reason: 'test' }, { task_id: 'sleep-1' });
    const snap = await p.next((m) => m.reply_to === cancel);
    expect(snap).toMatchObject({ type: 'task.snapshot', task_id: 'sleep-1' });
    expect(snap.payload.state).toBe('running');
    const cancelling = await p.next((m) => m.task_id === 'sleep-1' && m.type === 'task.event');
    expect(cancelling.payload).toEqual({ kind: 'state', state: 'cancelling' });
    const result = await p.next((m) => m.task_id === 'sleep-1' && m.type === 'task.result');
    expect(result.payload).toEqual({ status: 'cancelled' });
    checkStream(p.stream('sleep-1'));
    // A second cancel of a task a cancel ended gets a snapshot and has no effect.
    const again = p.send('task.cancel', {}, { task_id: 'sleep-1' });
    const snap2 = await p.next((m) => m.reply_to === again);
    expect(snap2.type).toBe('task.snapshot');
    expect(snap2.payload.result).toEqual({ status: 'cancelled' });
  });

  it('answers malformed JSON with MALFORMED_MESSAGE and keeps the session (spec: errors#order-of-checks)', async () => {
    const p = start();
    await p.handshake();
    p.raw('{"protocol": "tap/1.0", "message_id": ');
    const err = await p.next((m) => m.type === 'error');
    expect(err.payload.code).toBe('MALFORMED_MESSAGE');
    expect(err.payload.retryable).toBe(false);
    const dup = '{"protocol":"tap/1.0","message_id":"d-1","message_id":"d-2"}';
    p.raw(dup);
    const err2 = await p.next((m) => m.type === 'error');
    expect(err2.payload.code).toBe('MALFORMED_MESSAGE');
    const ping = p.send('ping', {});
    const pong = await p.next((m) => m.reply_to === ping);
    expect(pong.type).toBe('pong');
  });

  it('re-sends the original reply to a duplicate message_id byte for byte (spec: idempotency#duplicate-messages)', async () => {
    const p = start();
    await p.handshake();
    const line = JSON.stringify({
      protocol: 'tap/1.0',
      message_id: 'dup-req',
      type: 'task.request',
      source: SELF,
      target: p.agentId,
      timestamp: new Date().toISOString(),
      session_id: p.sessionId,
      task_id: 'count-1',
      payload: { capability: 'tap.test.counter', input: { key: 'k' } },
    });
    p.raw(line);
    await p.next((m) => m.type === 'task.result' && m.task_id === 'count-1');
    const first = p.lines.find((l) => l.includes('"reply_to":"dup-req"'))!;
    p.raw(line);
    await p.next((m) => m.reply_to === 'dup-req');
    expect(p.lines.filter((l) => l === first)).toHaveLength(2);
    const result = p.received.filter((m) => m.type === 'task.result' && m.task_id === 'count-1');
    expect(result).toHaveLength(1);
    expect(result[0]!.payload.output).toEqual({ key: 'k', count: 1 });
  });

  it('hands off unfinished work and exits 0 at end of input (spec: shutdown)', async () => {
    const p = start();
    await p.handshake();
    p.send('task.request', { capability: 'tap.test.sleep', input: { ms: 60000 } }, { task_id: 'sleep-2' });
    await p.next((m) => m.type === 'task.event' && m.task_id === 'sleep-2');
    p.child.stdin.end();
    expect(await p.exited).toBe(0);
    const handoff = await p.next((m) => m.type === 'task.handoff');
    expect(handoff.task_id).toBe('sleep-2');
    const result = await p.next((m) => m.type === 'task.result' && m.task_id === 'sleep-2');
    expect(result.payload.status).toBe('cancelled');
    expect(result.payload.error).toMatchObject({ code: 'SHUTTING_DOWN', retryable: true });
    const farewell = await p.next((m) => m.type === 'session.farewell');
    expect(p.received.at(-1)).toBe(farewell);
    checkStream(p.stream('sleep-2'));
  });

  it('answers requests that arrive during a shutdown.request sequence, then says farewell and exits 0 (spec: shutdown#shutdown-sequence)', async () => {
    const p = start();
    await p.handshake();
    p.send('task.request', { capability: 'tap.test.sleep', input: { ms: 60000 } }, { task_id: 'sleep-3' });
    await p.next((m) => m.type === 'task.event' && m.task_id === 'sleep-3');
    const stop = p.send('shutdown.request', { reason: 'test', grace_ms: 2000 });
    const late = p.send('task.request', { capability: 'tap.test.echo', input: 'late' }, { task_id: 'late-1' });
    const ping = p.send('ping', {});
    expect((await p.next((m) => m.reply_to === stop)).payload).toEqual({ approve: true });
    const refused = await p.next((m) => m.reply_to === late);
    expect(refused.payload).toMatchObject({ code: 'SHUTTING_DOWN', retryable: true });
    expect((await p.next((m) => m.reply_to === ping)).type).toBe('pong');
    expect(await p.exited).toBe(0);
    const types = p.stream('sleep-3').map((m) => m.type);
    expect(types).toEqual(['task.accepted', 'task.event', 'task.handoff', 'task.event', 'task.result']);
    expect(p.received.at(-1)!.type).toBe('session.farewell');
  });

  it('exits 0 at end of input before any handshake', async () => {
    const p = start();
    p.child.stdin.end();
    expect(await p.exited).toBe(0);
    expect(p.lines).toEqual([]);
  });
});

describe('tap-conform against the Python agent, a TAP 1.0 agent', () => {
  it('passes every invalid-message fixture case: the fixtures of 1.1 features are not replayed in its sessions of 1.0 (spec: versioning#tap-1-1)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tap-python-fixtures-'));
    try {
      const report = join(dir, 'report.json');
      const run = spawnSync(
        process.execPath,
        [join(ROOT, 'bin/tap-conform.mjs'), '--only', 'core.fixtures.*', '--json', report, '--', 'python3', AGENT],
        { cwd: ROOT, encoding: 'utf8', timeout: 60_000 },
      );
      const cases = (JSON.parse(readFileSync(report, 'utf8')) as { cases: { id: string; verdict: string; detail: string }[] }).cases;
      expect(cases.filter((c) => c.verdict !== 'PASS').map((c) => `${c.id}: ${c.verdict} ${c.detail}`)).toEqual([]);
      expect(cases.length).toBeGreaterThanOrEqual(6);
      expect(run.status).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 90_000);
});
