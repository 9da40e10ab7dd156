/**
 * The harness's judge (conformance/judge/history.ts) and the reference's history checker
 * (reference/core/history.ts) were written apart; here they must reach the same verdicts, rule
 * for rule and message for message, over every golden transcript, over each golden transcript
 * broken in every small way (a message dropped, repeated under a new id, moved, renumbered, or
 * given another state). Over what the broken agents really send, the self-test compares them on
 * the wire transcripts of its runs (test/harness-selftest.process.test.ts).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkHistory } from '../../reference/core/history.ts';
import TASK_STATES from '../../schemas/v1/task-states.json' with { type: 'json' };
import { judgeHistory } from '../judge/history.ts';
import { repoPath } from '../paths.ts';

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
