/**
 * What the soak's steps share: the paths of the bins, the run's settings and figures, the seeded
 * generator of hostile frames, and the links (stdio and WebSocket) that carry them to an agent.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import WebSocket from 'ws';
import { decodeFrame, topLevelStrings } from '../../reference/core/decode.ts';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const AGENT = join(ROOT, 'bin/tap-reference-agent.mjs');
export const CONFORM = join(ROOT, 'bin/tap-conform.mjs');
export const HOSTILE = join(ROOT, 'fixtures/agents/hostile/agent.mjs');

/** How big the run is: set once by tools/soak.ts from its command line (configure). */
export const settings = { short: false, frames: 0, kills: 0, rssLimitKb: 0 };

/** Every process this run starts carries this marker, so that leftovers can be counted. */
export const TAG = randomBytes(6).toString('hex');
export const ENV = { ...process.env, TAP_SOAK_TAG: TAG };

/** The figures the run prints; any non-zero failure figure fails it. */
export const figures = {
  frames_sent: 0,
  frames_expecting_reply: 0,
  frames_answered: 0,
  unanswered_frames: 0,
  closes_by_agent: 0,
  crashes: 0,
  peak_rss_kb: 0,
  rss_limit_kb: 0,
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
export const notes: string[] = [];

// A seeded generator, so that a failing run can be replayed with --seed.
let state = 1;

/** Sets the run's size and seed (tools/soak.ts, from its command line). */
export function configure(o: { short: boolean; frames: number; kills: number; rssLimitKb: number; seed: number }): void {
  Object.assign(settings, { short: o.short, frames: o.frames, kills: o.kills, rssLimitKb: o.rssLimitKb });
  figures.rss_limit_kb = o.rssLimitKb;
  state = o.seed >>> 0 || 1;
}

export function rand(): number {
  state ^= state << 13;
  state >>>= 0;
  state ^= state >>> 17;
  state ^= state << 5;
  state >>>= 0;
  return state / 0x100000000;
}
const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export function rssKb(pid: number | undefined): number {
  if (pid === undefined) return 0;
  try {
    return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
  } catch {
    return 0;
  }
}

// ---------------------------------------------------------------- frames

/** Every malformed or invalid fixture as one frame of bytes. */
export function fixtureFrames(): Buffer[] {
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
export function request(): Record<string, unknown> {
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
export function generate(fixtures: Buffer[]): Buffer {
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

export interface Link {
  send(frame: Buffer): void;
  /** Messages received so far. */
  got: Array<Record<string, unknown>>;
  closed: boolean;
  /** How the connection ended, when it did: the WebSocket close code and reason, or the error. */
  ended?: string;
  close(): void;
  pid?: number;
}

export function stdioAgent(args: string[] = []): Link & { child: ChildProcess; exited: Promise<number | null> } {
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

export async function wsLink(url: string): Promise<Link> {
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

export async function listening(args: string[] = []): Promise<{ child: ChildProcess; url: string }> {
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
export async function batch(link: Link, frames: Buffer[], waitMs: number): Promise<number> {
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
