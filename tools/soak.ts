/**
 * The standing attack suite: a fuzzer over stdio and WebSocket (generated, mutated, deeply
 * nested and every malformed fixture in fixtures/invalid), the eviction and amplification
 * attacks, SIGKILLs mid-task with --state-dir, a torn-journal restart and hostile agents under
 * tap-conform, all on 127.0.0.1 and bounded in time. It prints its figures and exits 1 on any
 * crash, lost task, doubled effect, unanswered frame, unbounded growth or leftover process.
 *
 * Usage: tsx tools/soak.ts [--short] [--seed N] [--frames N] [--kills N] [--rss-limit-mb N] [--only a,b]
 *   --short   a short run (for the test suite); the default run takes a few minutes
 *   --only    run only these steps: fuzz, eviction, amplification, kills, torn, hostile
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { appendFileSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import WebSocket from 'ws';
import { decodeFrame, topLevelStrings } from '../reference/core/decode.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const AGENT = join(ROOT, 'bin/tap-reference-agent.mjs');
const CONFORM = join(ROOT, 'bin/tap-conform.mjs');
const HOSTILE = join(ROOT, 'fixtures/agents/hostile/agent.mjs');

const { values } = parseArgs({
  options: {
    short: { type: 'boolean', default: false },
    seed: { type: 'string', default: '20250314' },
    frames: { type: 'string' },
    kills: { type: 'string' },
    'rss-limit-mb': { type: 'string', default: '512' },
    only: { type: 'string' },
  },
});
const SHORT = values.short === true;
const FRAMES = Number(values.frames ?? (SHORT ? 3_000 : 100_000));
const KILLS = Number(values.kills ?? (SHORT ? 2 : 50));
const RSS_LIMIT_KB = Number(values['rss-limit-mb']) * 1024;
/** Every process this run starts carries this marker, so that leftovers can be counted. */
const TAG = randomBytes(6).toString('hex');
const ENV = { ...process.env, TAP_SOAK_TAG: TAG };

/** The figures the run prints; any non-zero failure figure fails it. */
const figures = {
  frames_sent: 0,
  frames_expecting_reply: 0,
  frames_answered: 0,
  unanswered_frames: 0,
  closes_by_agent: 0,
  crashes: 0,
  peak_rss_kb: 0,
  rss_limit_kb: RSS_LIMIT_KB,
  amplification_growth_kb: 0,
  kills: 0,
  tasks_accepted: 0,
  tasks_lost: 0,
  effects_doubled: 0,
  eviction_effects_doubled: 0,
  torn_journal_lost: 0,
  harness_runs: 0,
  harness_hung: 0,
  leftover_processes: 0,
};
const notes: string[] = [];

// A seeded generator, so that a failing run can be replayed with --seed.
let state = Number(values.seed) >>> 0 || 1;
function rand(): number {
  state ^= state << 13;
  state >>>= 0;
  state ^= state >>> 17;
  state ^= state << 5;
  state >>>= 0;
  return state / 0x100000000;
}
const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function rssKb(pid: number | undefined): number {
  if (pid === undefined) return 0;
  try {
    return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
  } catch {
    return 0;
  }
}

// ---------------------------------------------------------------- frames

/** Every malformed or invalid fixture as one frame of bytes. */
function fixtureFrames(): Buffer[] {
  const out: Buffer[] = [];
  const walk = (dir: string): void => {
    for (const name of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, name.name);
      if (name.isDirectory()) walk(path);
      else if (name.name.endsWith('.expect.json') || name.name.endsWith('.md')) continue;
      else if (name.name.endsWith('.json')) out.push(Buffer.from(readFileSync(path, 'utf8').replace(/\r?\n\s*/g, '')));
      else out.push(readFileSync(path));
    }
  };
  walk(join(ROOT, 'fixtures/invalid'));
  return out.filter((b) => !b.includes(0x0a));
}

let ids = 0;
function request(): Record<string, unknown> {
  ids++;
  return {
    protocol: 'tap/1.0',
    message_id: `soak-${ids}`,
    type: 'task.request',
    source: 'soak.fuzzer',
    target: 'tap.reference',
    timestamp: new Date().toISOString(),
    task_id: `t-${ids}`,
    payload: { capability: 'tap.test.echo', input: { n: ids } },
  };
}

const KEYS = ['protocol', 'message_id', 'type', 'source', 'target', 'timestamp', 'task_id', 'payload', 'session_id', 'sequence'];
const VALUES: unknown[] = [null, true, 0, -1, 2 ** 53 + 1, '', 'error', '*', [], {}, 'x'.repeat(300), { type: 'error' }];

/** One generated frame: mutated, truncated, deeply nested, random bytes, or a fixture. */
function generate(fixtures: Buffer[]): Buffer {
  const r = rand();
  if (r < 0.15) return pick(fixtures);
  if (r < 0.25) {
    const depth = 1 + Math.floor(rand() * 20_000);
    const open = rand() < 0.5 ? '[' : '{"a":';
    const close = open === '[' ? ']' : '}';
    return Buffer.from(`{"message_id":"soak-deep-${ids++}","payload":${open.repeat(depth)}1${close.repeat(depth)}}`);
  }
  if (r < 0.32) {
    const bytes = randomBytes(1 + Math.floor(rand() * 200));
    for (let i = 0; i < bytes.length; i++) if (bytes[i] === 0x0a) bytes[i] = 0x20;
    return bytes;
  }
  const msg = request();
  const mutations = 1 + Math.floor(rand() * 3);
  for (let i = 0; i < mutations; i++) {
    const key = pick(KEYS);
    if (rand() < 0.4) delete msg[key];
    else msg[key] = pick(VALUES);
  }
  let text = JSON.stringify(msg);
  if (rand() < 0.3) text = text.slice(0, Math.floor(rand() * text.length));
  if (rand() < 0.1) text = text.replace('"payload"', '"payload":1,"payload"');
  return Buffer.from(text);
}

/** Whether the agent owes an answer: every frame except one whose top-level type is "error" (spec: errors#no-replies-to-errors). */
function expectsReply(frame: Buffer): boolean {
  let type: unknown;
  try {
    const d = decodeFrame({ bytes: frame, byteLength: frame.length, oversized: false }, { maxMessageBytes: 1 << 20 });
    type = d.ok ? d.message.type : d.type;
  } catch {
    // A decoder that cannot take the frame (deep nesting): its top-level members still say what it is.
    type = topLevelStrings(frame.toString('utf8'), frame.length).get('type');
  }
  return type !== 'error';
}

// ---------------------------------------------------------------- peers

interface Link {
  send(frame: Buffer): void;
  /** Messages received so far. */
  got: Array<Record<string, unknown>>;
  closed: boolean;
  /** How the connection ended, when it did: the WebSocket close code and reason, or the error. */
  ended?: string;
  close(): void;
  pid?: number;
}

function stdioAgent(args: string[] = []): Link & { child: ChildProcess; exited: Promise<number | null> } {
  const child = spawn(process.execPath, [AGENT, ...args], { env: ENV, stdio: ['pipe', 'pipe', 'ignore'] });
  const link = {
    child,
    got: [] as Array<Record<string, unknown>>,
    closed: false,
    pid: child.pid,
    exited: new Promise<number | null>((r) => child.on('exit', (c) => r(c))),
    send: (frame: Buffer) => {
      if (!link.closed) child.stdin.write(Buffer.concat([frame, Buffer.from('\n')]));
    },
    close: () => child.stdin.end(),
  };
  child.stdin.on('error', () => {});
  let buf = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => {
    buf += d;
    for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      try {
        link.got.push(JSON.parse(line));
      } catch {
        notes.push(`the agent wrote a line that is not JSON: ${line.slice(0, 80)}`);
      }
    }
  });
  child.on('exit', () => (link.closed = true));
  return link;
}

async function wsLink(url: string): Promise<Link> {
  const ws = new WebSocket(url, ['tap.v1']);
  const link: Link = {
    got: [],
    closed: false,
    send: (frame) => {
      if (!link.closed) ws.send(frame.toString('latin1') === frame.toString('utf8') ? frame.toString('utf8') : frame, { binary: false });
    },
    close: () => ws.close(),
  };
  ws.on('message', (d) => {
    try {
      link.got.push(JSON.parse(String(d)));
    } catch {
      notes.push('the agent sent a WebSocket frame that is not JSON');
    }
  });
  ws.on('close', (code, reason) => {
    link.closed = true;
    link.ended ??= `close ${code}${reason.length ? ` (${reason.toString()})` : ''}`;
  });
  ws.on('error', (err) => {
    link.closed = true;
    link.ended ??= `error: ${err.message}`;
  });
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  return link;
}

async function listening(args: string[] = []): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, [AGENT, '--listen', 'ws://127.0.0.1:0/tap', ...args], {
    env: ENV,
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  const url = await new Promise<string>((resolve, reject) => {
    let b = '';
    child.stdout!.on('data', (d) => {
      b += d;
      if (b.includes('\n')) resolve(b.trim().split('\n')[0]!);
    });
    child.on('exit', () => reject(new Error('the listening agent exited before printing its URL')));
  });
  return { child, url };
}

/** Sends `frames` on `link` in one batch and waits for the answers owed; returns those still missing. */
async function batch(link: Link, frames: Buffer[], waitMs: number): Promise<number> {
  const before = link.got.length;
  const owed = frames.filter(expectsReply).length;
  for (const f of frames) link.send(f);
  figures.frames_sent += frames.length;
  figures.frames_expecting_reply += owed;
  const end = Date.now() + waitMs;
  while (link.got.length - before < owed && !link.closed && Date.now() < end) await sleep(5);
  const answered = Math.min(owed, link.got.length - before);
  if (process.env.TAP_SOAK_DEBUG && answered < owed)
    process.stderr.write(
      `batch: ${owed - answered} of ${owed} unanswered (closed ${link.closed})\n${frames
        .filter(expectsReply)
        .map((f) => f.toString('utf8').slice(0, 120))
        .join('\n')}\n`,
    );
  figures.frames_answered += answered;
  if (link.closed) {
    figures.closes_by_agent++;
    figures.frames_expecting_reply -= owed - answered; // the agent may end a session after repeated bad input (spec: limits#repeated-bad-input)
    return 0;
  }
  return owed - answered;
}

// ---------------------------------------------------------------- attacks

async function fuzz(): Promise<void> {
  const fixtures = fixtureFrames();
  notes.push(`${fixtures.length} fixtures from fixtures/invalid in the mix`);
  const per = 25; // below the 32 refusals an agent must take before it may end a session (spec: limits#repeated-bad-input)
  const stdioShare = Math.max(per * 4, Math.floor(FRAMES / 10));
  // stdio: one agent process, replaced whenever it ends the session.
  let agent = stdioAgent();
  for (let sent = 0; sent < stdioShare; ) {
    if (agent.closed) {
      const code = await agent.exited;
      if (code !== 0 && code !== null) figures.crashes++;
      agent = stdioAgent();
    }
    const frames = Array.from({ length: per }, () => generate(fixtures));
    figures.unanswered_frames += await batch(agent, frames, 10_000);
    figures.peak_rss_kb = Math.max(figures.peak_rss_kb, rssKb(agent.pid));
    sent += per;
  }
  agent.close();
  const code = await Promise.race([agent.exited, sleep(10_000).then(() => 'hung' as const)]);
  if (code === 'hung') agent.child.kill('SIGKILL');
  // WebSocket: one server, a fresh connection per batch, many at once.
  const server = await listening();
  let serverDown = false;
  server.child.on('exit', () => (serverDown = true));
  const lanes = 8;
  let left = FRAMES - stdioShare;
  await Promise.all(
    Array.from({ length: lanes }, async () => {
      while (left > 0 && !serverDown) {
        left -= per;
        let link: Link;
        try {
          link = await wsLink(server.url);
        } catch {
          if (serverDown) return;
          continue;
        }
        figures.unanswered_frames += await batch(
          link,
          Array.from({ length: per }, () => generate(fixtures)),
          10_000,
        );
        link.close();
      }
    }),
  );
  figures.peak_rss_kb = Math.max(figures.peak_rss_kb, rssKb(server.child.pid));
  if (serverDown) {
    figures.crashes++;
    notes.push('the WebSocket server went down during the fuzz');
  }
  server.child.kill('SIGTERM');
}

/** A requester over WebSocket with the handshake and request helpers the attacks need. */
class Requester {
  private n = 0;
  session?: string;
  token?: string;
  agent = '*';
  constructor(
    readonly link: Link,
    readonly id: string,
  ) {}
  msg(type: string, payload: unknown, extra: Record<string, unknown> = {}): Record<string, unknown> {
    return {
      protocol: 'tap/1.0',
      message_id: `${this.id}-${++this.n}-${randomBytes(3).toString('hex')}`,
      type,
      source: this.id,
      target: this.agent,
      timestamp: new Date().toISOString(),
      ...(this.session ? { session_id: this.session } : {}),
      payload,
      ...extra,
    };
  }
  async wait(pred: (m: Record<string, unknown>) => boolean, ms = 30_000): Promise<Record<string, unknown>> {
    const end = Date.now() + ms;
    for (;;) {
      const m = this.link.got.find(pred);
      if (m) return m;
      if (this.link.closed || Date.now() > end) throw new Error(`no reply (${this.link.closed ? 'closed' : 'timed out'})`);
      await sleep(2);
    }
  }
  async req(type: string, payload: unknown, extra: Record<string, unknown> = {}): Promise<Record<string, unknown>> {
    const m = this.msg(type, payload, extra);
    this.link.send(Buffer.from(JSON.stringify(m)));
    return this.wait((x) => x.reply_to === m.message_id);
  }
  async handshake(resume?: { session_id: string; resume_token: string }): Promise<void> {
    const card = {
      agent_id: this.id,
      name: 'soak',
      description: 'soak requester',
      capabilities: [],
      limits: { max_concurrent_tasks: 64, max_task_seconds: 60, max_message_bytes: 4194304 },
    };
    const ack = await this.req('handshake.init', {
      versions: ['1.0'],
      agent: card,
      requires: [],
      params: { max_message_bytes: 4194304 },
      ...(resume ? { resume: { ...resume, tasks: [] } } : {}),
    });
    if (ack.type !== 'handshake.ack') throw new Error(`handshake refused: ${JSON.stringify(ack.payload)}`);
    const p = ack.payload as { session_id: string; resume_token: string; params: unknown };
    this.session = p.session_id;
    this.token = p.resume_token;
    this.agent = String(ack.source);
    await this.req('handshake.ready', { params: p.params });
    // Answer pings, so that liveness never ends the session.
    const seen = new Set<unknown>();
    const pong = setInterval(() => {
      for (const m of this.link.got) {
        if (m.type === 'ping' && !seen.has(m.message_id)) {
          seen.add(m.message_id);
          this.link.send(Buffer.from(JSON.stringify(this.msg('pong', {}, { reply_to: m.message_id }))));
        }
      }
      if (this.link.closed) clearInterval(pong);
    }, 200);
    pong.unref();
  }
  result(taskId: string, ms?: number): Promise<Record<string, unknown>> {
    return this.wait((m) => m.type === 'task.result' && m.task_id === taskId, ms);
  }
}

/** Another principal's traffic must not erase an idempotency record (spec: idempotency#keeping-records). */
async function evict(): Promise<void> {
  const server = await listening();
  try {
    const victim = new Requester(await wsLink(server.url), 'soak.victim');
    await victim.handshake();
    await victim.req(
      'task.request',
      { capability: 'tap.test.counter', input: { key: 'evict' } },
      { task_id: 'v1', idempotency_key: 'once' },
    );
    await victim.result('v1');
    const attacker = new Requester(await wsLink(server.url), 'soak.attacker');
    await attacker.handshake();
    const n = 4_200;
    let done = 0;
    for (let i = 0; i < n; i += 32) {
      const sent = Array.from({ length: Math.min(32, n - i) }, (_, j) =>
        attacker.msg('task.request', { capability: 'tap.test.echo', input: i + j }, { task_id: `a${i + j}` }),
      );
      for (const m of sent) attacker.link.send(Buffer.from(JSON.stringify(m)));
      for (const m of sent) {
        const reply = await attacker.wait((x) => x.reply_to === m.message_id, 60_000);
        if (reply.type === 'task.accepted') {
          await attacker.result(String(m.task_id), 60_000);
          done++;
        }
      }
      attacker.link.got.length = 0;
    }
    notes.push(`eviction: another principal finished ${done} of ${n} tasks`);
    const retry = await victim.req(
      'task.request',
      { capability: 'tap.test.counter', input: { key: 'evict' } },
      { task_id: 'v2', idempotency_key: 'once' },
    );
    if (retry.type === 'task.accepted') {
      figures.eviction_effects_doubled++;
      notes.push(`eviction: after ${n} tasks of another principal the victim's retry ran again`);
    }
  } finally {
    server.child.kill('SIGTERM');
  }
}

/** Small task.status requests for a large result must not pin memory per request (spec: limits#bounded-tables). */
async function amplify(): Promise<void> {
  const server = await listening();
  try {
    const r = new Requester(await wsLink(server.url), 'soak.amplifier');
    await r.handshake();
    await r.req('task.request', { capability: 'tap.test.echo', input: 'x'.repeat(900_000) }, { task_id: 'big' });
    await r.result('big');
    const before = rssKb(server.child.pid);
    const n = SHORT ? 100 : 3_000;
    const batch = 20;
    let asked = 0;
    while (asked < n) {
      const sent: Record<string, unknown>[] = [];
      for (let j = 0; j < batch; j++) sent.push(r.msg('task.status', {}, { task_id: 'big' }));
      asked += batch;
      for (const m of sent) r.link.send(Buffer.from(JSON.stringify(m)));
      try {
        await r.wait((x) => x.reply_to === sent.at(-1)!.message_id, 60_000);
      } catch (err) {
        // A requester that reads its replies slower than they come (a loaded machine) may be closed as lost:
        // its unread output past the agent's bound (spec: limits#back-pressure) or its heartbeats missed
        // (spec: liveness). That is the agent defending itself, not a crash, as long as it lives and serves
        // a new session; how the connection ended is noted.
        if (!r.link.closed || server.child.exitCode !== null || server.child.signalCode !== null) throw err;
        figures.closes_by_agent++;
        await new Requester(await wsLink(server.url), 'soak.after-amplifier').handshake();
        notes.push(
          `amplification: the agent ended the connection (${r.link.ended ?? 'closed'}) after ${asked} task.status, then served a new session`,
        );
        break;
      }
      r.link.got.length = 0; // keep this side's memory flat
    }
    const after = rssKb(server.child.pid);
    figures.amplification_growth_kb = Math.max(0, after - before);
    figures.peak_rss_kb = Math.max(figures.peak_rss_kb, after);
    notes.push(`amplification: ${asked} task.status for a 900 KB result, agent RSS ${before} → ${after} KB`);
  } finally {
    server.child.kill('SIGTERM');
  }
}

/** A stdio requester on a durable agent, resuming its session across restarts. */
async function durableSession(dir: string, resume?: { session_id: string; resume_token: string }) {
  const agent = stdioAgent(['--state-dir', dir]);
  const r = new Requester(agent, 'soak.durable');
  await r.handshake(resume);
  return { agent, r, resume: { session_id: r.session!, resume_token: r.token! } };
}

/** SIGKILLs mid-task: every accepted task survives, no effect runs twice (spec: tasks#durability). */
async function kills(dir: string): Promise<{ session_id: string; resume_token: string }> {
  const accepted: string[] = [];
  let resume: { session_id: string; resume_token: string } | undefined;
  for (let i = 0; i < KILLS; i++) {
    const s = await durableSession(dir, resume);
    resume = s.resume;
    for (const id of accepted) {
      const st = await s.r.req('task.status', {}, { task_id: id });
      if (st.type !== 'task.snapshot') {
        figures.tasks_lost++;
        notes.push(`after kill ${i}: task ${id} is unknown`);
      }
    }
    const id = `k${i}`;
    const reply = await s.r.req(
      'task.request',
      { capability: 'tap.test.counter', input: { key: 'kills' } },
      { task_id: id, idempotency_key: id },
    );
    if (reply.type === 'task.accepted') {
      accepted.push(id);
      figures.tasks_accepted++;
    }
    await sleep(rand() * 30);
    s.agent.child.kill('SIGKILL');
    await s.agent.exited;
    figures.kills++;
  }
  const s = await durableSession(dir, resume);
  for (const id of accepted) {
    const retry = await s.r.req(
      'task.request',
      { capability: 'tap.test.counter', input: { key: 'kills' } },
      { task_id: `${id}-again`, idempotency_key: id },
    );
    if (retry.type === 'task.accepted') figures.effects_doubled++;
  }
  const last = await s.r.req('task.request', { capability: 'tap.test.counter', input: { key: 'kills' } }, { task_id: 'final' });
  if (last.type === 'task.accepted') {
    const res = await s.r.result('final');
    const count = (res.payload as { output?: { count?: number } }).output?.count ?? 0;
    if (count > accepted.length + 1) figures.effects_doubled += count - accepted.length - 1;
    notes.push(`kills: ${accepted.length} counter tasks accepted across ${KILLS} SIGKILLs; the counter reads ${count}`);
  }
  s.agent.child.kill('SIGKILL');
  await s.agent.exited;
  return s.resume;
}

/** A torn last journal line: the restart drops it and the next task survives (spec: tasks#journal). */
async function torn(dir: string, resume: { session_id: string; resume_token: string }): Promise<void> {
  appendFileSync(join(dir, 'journal.jsonl'), '{"t":"task","principal":"x","task_id":"torn","sess');
  const s = await durableSession(dir, resume);
  await s.r.req(
    'task.request',
    { capability: 'tap.test.counter', input: { key: 'torn' } },
    { task_id: 'after-torn', idempotency_key: 'torn' },
  );
  await s.r.result('after-torn');
  s.agent.child.kill('SIGKILL');
  await s.agent.exited;
  const t = await durableSession(dir, s.resume);
  const st = await t.r.req('task.status', {}, { task_id: 'after-torn' });
  if (st.type !== 'task.snapshot') figures.torn_journal_lost++;
  const retry = await t.r.req(
    'task.request',
    { capability: 'tap.test.counter', input: { key: 'torn' } },
    { task_id: 'again', idempotency_key: 'torn' },
  );
  if (retry.type === 'task.accepted') figures.effects_doubled++;
  t.agent.child.kill('SIGKILL');
  await t.agent.exited;
}

/** tap-conform against hostile agents: it must finish and leave nothing running (spec: conformance#processes). */
async function hostile(): Promise<void> {
  for (const mode of SHORT ? ['daemon'] : ['forker', 'daemon', 'hang']) {
    const child = spawn(
      process.execPath,
      [CONFORM, '--time-scale', mode === 'hang' ? '0.1' : '1', '--only', 'core.handshake.complete', '--', 'node', HOSTILE, mode],
      { cwd: ROOT, env: { ...ENV, HOLD_MS: '120000' }, stdio: 'ignore' },
    );
    figures.harness_runs++;
    const code = await Promise.race([new Promise((r) => child.on('exit', r)), sleep(90_000).then(() => 'hung')]);
    if (code === 'hung') {
      figures.harness_hung++;
      child.kill('SIGKILL');
    }
    notes.push(`tap-conform on a hostile agent (${mode}): ${code === 'hung' ? 'hung' : `exit ${code}`}`);
  }
}

function leftovers(): number[] {
  const out: number[] = [];
  for (const name of readdirSync('/proc').filter((n) => /^\d+$/.test(n))) {
    if (Number(name) === process.pid) continue;
    try {
      if (readFileSync(`/proc/${name}/environ`, 'latin1').split('\0').includes(`TAP_SOAK_TAG=${TAG}`)) out.push(Number(name));
    } catch {
      // gone
    }
  }
  return out;
}

async function main(): Promise<void> {
  const started = Date.now();
  const dir = mkdtempSync(join(tmpdir(), 'tap-soak-'));
  const only = values.only?.split(',');
  const step = async (name: string, fn: () => Promise<unknown>): Promise<void> => {
    if (only && !only.includes(name.split(' ')[0]!)) return;
    const t = Date.now();
    process.stderr.write(`soak: ${name}…\n`);
    try {
      await fn();
    } catch (err) {
      figures.crashes++;
      notes.push(`${name} could not finish: ${(err as Error).message}`);
    }
    notes.push(`${name}: ${((Date.now() - t) / 1000).toFixed(1)} s`);
  };
  try {
    await step('fuzz', fuzz);
    await step('eviction', evict);
    await step('amplification', amplify);
    let resume: { session_id: string; resume_token: string } | undefined;
    await step('kills', async () => (resume = await kills(dir)));
    await step('torn journal', async () => torn(dir, resume ?? (await kills(dir))));
    if (process.platform === 'linux') await step('hostile agents', hostile);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  await sleep(500);
  const left = process.platform === 'linux' ? leftovers() : [];
  figures.leftover_processes = left.length;
  for (const pid of left) process.kill(pid, 'SIGKILL');

  console.log(
    `tap soak (${SHORT ? 'short' : 'full'}, seed ${values.seed}) in ${((Date.now() - started) / 1000).toFixed(1)} s, from ${relative(process.cwd(), ROOT) || '.'}`,
  );
  for (const [k, v] of Object.entries(figures)) console.log(`  ${k.padEnd(26)} ${v}`);
  for (const n of notes) console.log(`  - ${n}`);
  const failures = [
    figures.crashes > 0 && 'crashes',
    figures.unanswered_frames > 0 && 'unanswered frames',
    figures.tasks_lost > 0 && 'lost tasks',
    figures.effects_doubled > 0 && 'doubled effects',
    figures.eviction_effects_doubled > 0 && 'an idempotency record evicted by another principal',
    figures.torn_journal_lost > 0 && 'a task lost after a torn journal',
    figures.peak_rss_kb > RSS_LIMIT_KB && `peak RSS above ${RSS_LIMIT_KB} KB`,
    figures.amplification_growth_kb > RSS_LIMIT_KB / 2 && 'unbounded growth under amplification',
    figures.harness_hung > 0 && 'a hung harness',
    figures.leftover_processes > 0 && 'leftover processes',
  ].filter(Boolean);
  if (failures.length > 0) {
    console.log(`soak FAILED: ${failures.join(', ')}`);
    process.exit(1);
  }
  console.log('soak passed: 0 crashes, 0 lost, 0 doubled, 0 leftover processes');
  process.exit(0);
}

await main();
