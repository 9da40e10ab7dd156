/**
 * The harness's judge (conformance/judge/history.ts) and the reference's history checker
 * (reference/core/history.ts) were written apart; here they must reach the same verdicts, rule
 * for rule and message for message, over every golden transcript, over each golden transcript
 * broken in every small way (a message dropped, repeated under a new id, moved, renumbered, or
 * given another state), and over what the broken agents of the self-test really send.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkHistory } from '../../reference/core/history.ts';
import TASK_STATES from '../../schemas/v1/task-states.json' with { type: 'json' };
import { ALL_CASES } from '../cases/index.ts';
import type { RunEnv } from '../context.ts';
import { judgeHistory } from '../judge/history.ts';
import { newKey } from '../mac.ts';
import { repoPath } from '../paths.ts';
import type { Received } from '../peer.ts';
import { probe } from '../probe.ts';
import { recovered, runCase } from '../runner.ts';
import type { TargetSpec } from '../target.ts';

type Msg = Record<string, unknown>;
const verdicts = (v: readonly { index: number; task_id?: string; rule: string }[]) =>
  v.map((x) => `${x.index} ${x.task_id ?? '-'} ${x.rule}`).sort();

/** Both checkers over one history, complete and not: the same findings, in the same places; `quiet` names the quiet tasks. */
function agree(msgs: readonly unknown[], quiet: ReadonlySet<string> = new Set()): string[] {
  for (const complete of [false, true]) {
    const theirs = verdicts(checkHistory(msgs, undefined, { complete, quiet }));
    const ours = verdicts(judgeHistory(msgs, { complete, quietTasks: quiet }));
    expect(ours, JSON.stringify(msgs.map((m) => [(m as Msg)?.type, (m as Msg)?.task_id, (m as Msg)?.sequence]))).toEqual(theirs);
  }
  return verdicts(judgeHistory(msgs, { complete: true, quietTasks: quiet }));
}

/** The tasks a transcript's requester asked for quiet in a session that negotiated 1.1 (spec: tasks#quiet-tasks). */
function quietTasks(lines: readonly { dir: string; message?: Msg }[]): Set<string> {
  const quiet = new Set<string>();
  let version = '1.0';
  for (const { dir, message: m } of lines) {
    if (dir === 'agent->requester' && m?.type === 'handshake.ack') version = String((m.payload as Msg).version);
    if (dir === 'requester->agent' && m?.type === 'task.request' && (m.payload as Msg).quiet === true && version !== '1.0')
      quiet.add(String(m.task_id));
  }
  return quiet;
}

const TRANSCRIPTS = repoPath('fixtures/transcripts');
const goldens = readdirSync(TRANSCRIPTS)
  .filter((f) => f.endsWith('.ndjson'))
  .map((f) => {
    const lines = readFileSync(join(TRANSCRIPTS, f), 'utf8')
      .split('\n')
      .filter((l) => l.trim() !== '')
      .map((l) => JSON.parse(l) as { dir: string; message?: Msg });
    return { name: f, agent: lines.filter((l) => l.dir === 'agent->requester').map((l) => l.message as Msg), quiet: quietTasks(lines) };
  });

const clone = (m: Msg): Msg => structuredClone(m);

/** Every small way to break a history: each variant is the history with one change. */
function variants(h: readonly Msg[]): Msg[][] {
  const out: Msg[][] = [];
  const states = [...TASK_STATES.states, 'nonsense'];
  h.forEach((m, i) => {
    out.push(h.filter((_, j) => j !== i)); // dropped
    out.push([...h.slice(0, i + 1), { ...clone(m), message_id: `${String(m.message_id)}-again` }, ...h.slice(i + 1)]); // repeated, new id
    out.push([...h.slice(0, i + 1), clone(m), ...h.slice(i + 1)]); // re-sent byte for byte
    out.push([...h.slice(0, i + 1), { ...clone(h[0]!), type: m.type, payload: { other: true } }, ...h.slice(i + 1)]); // id reused
    if (i + 1 < h.length) out.push([...h.slice(0, i), h[i + 1]!, m, ...h.slice(i + 2)]); // moved one later
    out.push([...h, clone(m)].map((x, j) => (j === h.length ? { ...x, message_id: 'late-copy' } : x))); // repeated at the end
    if (typeof m.sequence === 'number') {
      for (const d of [-1, 1, 2]) out.push(h.map((x, j) => (j === i ? { ...clone(x), sequence: (m.sequence as number) + d } : x)));
      out.push(h.map((x, j) => (j === i ? { ...clone(x), sequence: undefined } : x)));
      out.push(h.map((x, j) => (j === i ? { ...clone(x), task_id: 'someone-else' } : x)));
    } else {
      out.push(h.map((x, j) => (j === i ? { ...clone(x), sequence: 1 } : x)));
    }
    const p = (m.payload ?? {}) as Msg;
    if (m.type === 'task.event' && p.kind === 'state')
      for (const s of states) out.push(h.map((x, j) => (j === i ? { ...clone(x), payload: { ...p, state: s } } : x)));
    if (m.type === 'task.result')
      for (const s of states) out.push(h.map((x, j) => (j === i ? { ...clone(x), payload: { ...p, status: s } } : x)));
    if (m.type === 'task.snapshot') {
      for (const d of [-1, 1])
        out.push(h.map((x, j) => (j === i ? { ...clone(x), payload: { ...p, last_sequence: Number(p.last_sequence) + d } } : x)));
      for (const s of states) out.push(h.map((x, j) => (j === i ? { ...clone(x), payload: { ...p, state: s } } : x)));
    }
    if (m.type === 'plan.submit') {
      out.push(h.map((x, j) => (j === i ? { ...clone(x), payload: { ...p, revision_of: 'never-sent' } } : x)));
      out.push(h.map((x, j) => (j === i ? { ...clone(x), payload: { ...p, revision_of: undefined } } : x)));
      out.push([...h.slice(0, i + 1), { ...clone(m), message_id: 'plan-again', sequence: Number(m.sequence) + 1 }, ...h.slice(i + 1)]);
    }
    out.push(h.map((x, j) => (j === i ? { ...clone(x), type: 'task.request' } : x)));
  });
  out.push([...h, 42, null, { type: 7 }] as Msg[]);
  return out;
}

describe('the harness judge agrees with the reference checker (spec: tasks#states)', () => {
  it.each(goldens.map((g) => [g.name, g]))('on the golden transcript %s', (_, g) => {
    expect(agree(g.agent, g.quiet)).toEqual([]);
  });

  it.each(goldens.map((g) => [g.name, g]))('on every one-change break of %s, and finds faults in them', (_, g) => {
    const broken = variants(g.agent).map((v) => agree(v, g.quiet));
    // The variants are not all harmless: the judge must find something in many of them.
    if (g.agent.some((m) => typeof m.sequence === 'number')) expect(broken.filter((v) => v.length > 0).length).toBeGreaterThan(5);
  });
});

interface Entry {
  name: string;
  command: string[];
  expected_case: string;
  binding?: string;
}

const manifest = (JSON.parse(readFileSync(repoPath('fixtures/agents/broken/manifest.json'), 'utf8')) as Entry[]).filter(
  (e) => e.binding !== 'websocket',
);

/** Each session's messages from the agent, as received and as recovered by resume. */
function sessions(received: readonly Received[]): unknown[][] {
  const by = new Map<unknown, Received[]>();
  for (const r of received) by.set(r.session, [...(by.get(r.session) ?? []), r]);
  return [...by.values()].flatMap((list) => [list.map((r) => r.msg), recovered(list)]);
}

async function envFor(command: string[]): Promise<RunEnv> {
  const target: TargetSpec = { kind: 'stdio', command: command[0]!, args: command.slice(1), display: command.join(' ') };
  const base = {
    target,
    selfId: 'tap-conform',
    key: { keyId: 'judge-key', key: newKey(), peer: 'tap-conform.hmac' },
    stepTimeoutMs: 5000,
    timeScale: 2,
    seed: 7,
    runs: 3,
    replay: (id: string) => id,
    debug: false,
    shared: new Map(),
  };
  return { ...base, probe: await probe(base), startupMs: 10_000 };
}

describe('the harness judge agrees with the reference checker on what broken agents send', () => {
  it('over the targeted case of every stdio agent of fixtures/agents/broken', { timeout: 300_000 }, async () => {
    const failed: string[] = [];
    let histories = 0;
    const queue = [...manifest];
    const worker = async () => {
      for (let e = queue.shift(); e; e = queue.shift()) {
        const env = await envFor(e.command.map((a, i) => (i === 0 ? a : a.startsWith('fixtures/') ? repoPath(a) : a)));
        for (const id of [e.expected_case]) {
          const c = ALL_CASES.find((x) => x.id === id);
          if (!c) throw new Error(`manifest names no case ${id}`);
          const r = await runCase(c, env);
          for (const msgs of sessions(r.ctx?.findings.received ?? [])) {
            histories++;
            const theirs = verdicts(checkHistory(msgs));
            const ours = verdicts(judgeHistory(msgs));
            if (JSON.stringify(theirs) !== JSON.stringify(ours)) failed.push(`${e.name} ${id}: ${ours} vs ${theirs}`);
          }
        }
      }
    };
    // Four at once: most of each run waits for replies a broken agent never sends.
    await Promise.all([worker(), worker(), worker(), worker()]);
    expect(failed).toEqual([]);
    expect(histories).toBeGreaterThan(manifest.length);
  });
});
