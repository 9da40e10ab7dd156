/**
 * Replays every golden transcript (fixtures/transcripts/*.ndjson) against the reference agent over
 * a memory pair: the requester's lines go out in order, each only after the agent's lines that
 * precede it in the transcript have arrived, and the agent's messages are compared by role: type,
 * reply_to, task_id, presence of a sequence, state, event kind, result status, error code. Values
 * the agent chooses (message ids, session ids, resume tokens, plan ids) are mapped from the
 * transcript's examples to the live values as they arrive; timestamps and deadlines are ignored.
 * Progress and log events and liveness pings are informational and left out of the comparison.
 * Of TAP 1.1 the role also holds the negotiated version, the trace context a message carries, the
 * tasks a page lists, and, for a quiet task, whose stream has no informational events, the
 * sequence numbers themselves (spec: tasks#quiet-tasks).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { checkHistory } from '../core/history.ts';
import { createAgent } from './agent.ts';
import type { Agent } from './agent.ts';
import { withConformanceCapabilities } from './conformance-capabilities.ts';
import { agentCard, expectCleanHistories, TestPeer, type Msg } from './peer.testkit.ts';

afterEach(expectCleanHistories);

const DIR = join(dirname(fileURLToPath(import.meta.url)), '../../fixtures/transcripts');

type Line = { dir: 'requester->agent' | 'agent->requester'; message: Msg } | { dir: 'note'; text: string };

function load(name: string): Line[] {
  return readFileSync(join(DIR, name), 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as Line);
}

/** Informational: progress and log events, and the agent's liveness pings. */
function informational(m: Msg): boolean {
  if (m.type === 'ping') return true;
  return m.type === 'task.event' && (m.payload?.kind === 'progress' || m.payload?.kind === 'log');
}

/** The role of an agent message: what a replay must reproduce; `quiet` names the quiet tasks. */
function role(m: Msg, ids: Map<string, string>, quiet: ReadonlySet<string>): Msg {
  const p = m.payload ?? {};
  const code = p.code ?? p.error?.code;
  const isQuiet = typeof m.task_id === 'string' && quiet.has(m.task_id);
  const out: Msg = {
    type: m.type,
    reply_to: m.reply_to === undefined ? undefined : (ids.get(m.reply_to) ?? m.reply_to),
    task_id: m.task_id,
    sequenced: typeof m.sequence === 'number',
    state: p.state,
    kind: p.kind,
    status: p.status,
    code,
    resumed: p.resumed,
    approve: p.approve,
    fatal: p.fatal,
    version: m.type === 'handshake.ack' ? p.version : undefined,
    missing: p.details?.missing,
    traceparent: m.metadata?.traceparent,
    tracestate: m.metadata?.tracestate,
    listed: m.type === 'task.page' ? p.tasks?.map((t: Msg) => `${t.task_id} ${t.state}`) : undefined,
    more: m.type === 'task.page' ? typeof p.next_cursor === 'string' : undefined,
    sequence: isQuiet ? m.sequence : undefined,
    last_sequence: isQuiet ? p.last_sequence : undefined,
  };
  for (const k of Object.keys(out)) if (out[k] === undefined) delete out[k];
  return out;
}

/** Replaces every string in `value` found in `map`. */
function rewrite(value: unknown, map: Map<string, string>): unknown {
  if (typeof value === 'string') return map.get(value) ?? value;
  if (Array.isArray(value)) return value.map((v) => rewrite(v, map));
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, rewrite(v, map)]));
  }
  return value;
}

/** Records the agent-chosen values of `expected` as the live values in `actual`. */
function learn(expected: Msg, actual: Msg, map: Map<string, string>): void {
  const pairs: Array<[unknown, unknown]> = [
    [expected.message_id, actual.message_id],
    [expected.session_id, actual.session_id],
    [expected.payload?.session_id, actual.payload?.session_id],
    [expected.payload?.resume_token, actual.payload?.resume_token],
    [expected.payload?.plan?.plan_id, actual.payload?.plan?.plan_id],
    [expected.payload?.plan?.revision_of, actual.payload?.plan?.revision_of],
    [expected.payload?.next_cursor, actual.payload?.next_cursor],
    [expected.payload?.request_id, actual.payload?.request_id],
  ];
  for (const [e, a] of pairs) if (typeof e === 'string' && typeof a === 'string') map.set(e, a);
}

function referenceAgent(): Agent {
  return createAgent({
    card: {
      ...agentCard(),
      agent_id: 'tap-reference-agent',
      limits: { max_concurrent_tasks: 8, max_task_seconds: 300, max_message_bytes: 1048576 },
    },
    capabilities: withConformanceCapabilities(),
    logger: () => {},
  });
}

async function replay(name: string): Promise<{ expected: Msg[]; actual: Msg[]; all: Msg[]; quiet: ReadonlySet<string> }> {
  const lines = load(name);
  const agent = referenceAgent();
  const peers: TestPeer[] = [];
  let peer = new TestPeer(agent);
  peer.timeoutMs = 10_000;
  peers.push(peer);
  await peer.started;
  const map = new Map<string, string>();
  const expected: Msg[] = [];
  const liveAll = (): Msg[] => peers.flatMap((p) => p.received);
  const live = (): Msg[] => liveAll().filter((m) => !informational(m));
  // The tasks requested quiet in a session the transcript shows negotiating 1.1 (spec: tasks#quiet-tasks).
  const quiet = new Set<string>();
  let version = '1.0';
  let learned = 0;
  const catchUp = async (): Promise<void> => {
    await peer.until(() => live().length >= expected.length, 3_000).catch(() => {});
    const got = live();
    for (; learned < Math.min(expected.length, got.length); learned++) learn(expected[learned]!, got[learned]!, map);
  };
  for (const line of lines) {
    if (line.dir === 'note') {
      if (/transport drops/i.test(line.text)) {
        await catchUp();
        await peer.close();
        peer = new TestPeer(agent);
        peer.timeoutMs = 10_000;
        peers.push(peer);
        await peer.started;
      }
      continue;
    }
    if (line.dir === 'agent->requester') {
      if (line.message.type === 'handshake.ack') version = line.message.payload?.version ?? version;
      if (!informational(line.message)) expected.push(line.message);
      continue;
    }
    await catchUp();
    const msg = line.message;
    if (msg.type === 'task.request' && msg.payload?.quiet === true && version !== '1.0') {
      quiet.add(msg.task_id);
      peer.quietTasks.add(msg.task_id);
    }
    // Pongs to the agent's pings are sent by the peer itself.
    if (msg.type === 'pong') continue;
    const out = rewrite(msg, map) as Msg;
    out.timestamp = new Date().toISOString();
    if (out.type === 'handshake.ready') {
      const ack = [...live()].reverse().find((m) => m.type === 'handshake.ack');
      if (ack) out.payload = { ...out.payload, params: ack.payload.params };
    }
    peer.sendText(JSON.stringify(out));
  }
  await catchUp();
  // A moment for anything unexpected to arrive.
  await new Promise((r) => setTimeout(r, 100));
  for (const p of peers) p.sessionId = p.received.find((m) => m.type === 'handshake.ack')?.payload?.session_id;
  const ids = new Map([...map].map(([k, v]) => [v, k]));
  return {
    expected: expected.map((m) => role(m, new Map(), quiet)),
    actual: live().map((m) => role(m, ids, quiet)),
    all: liveAll(),
    quiet,
  };
}

const files = readdirSync(DIR)
  .filter((f) => f.endsWith('.ndjson'))
  .sort();

describe('golden transcripts replay against the reference agent', () => {
  it('finds the transcripts', () => {
    expect(files.length).toBeGreaterThanOrEqual(12);
  });
  for (const file of files) {
    it(`${file} (spec: conformance#transcripts)`, async () => {
      const { expected, actual, all, quiet } = await replay(file);
      if (process.env.TRANSCRIPT_DEBUG) console.log(file, all.map((m) => `${m.type}/${m.task_id ?? ''}/${m.reply_to ?? ''}`).join('\n'));
      expect(actual).toEqual(expected);
      expect(checkHistory(all, undefined, { quiet })).toEqual([]);
    }, 30_000);
  }
});
