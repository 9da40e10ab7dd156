import { describe, expect, it } from 'vitest';
import { checkTranscript } from '../reference/core/history.ts';
import { catalogueTypes, createAjv, REQUIRED_TRANSCRIPTS, transcriptFixtures, validateWith } from '../tools/validate-fixtures.ts';

type Msg = Record<string, unknown> & { type: string; message_id: string; payload: Record<string, unknown> };
type Line = { dir: 'requester->agent' | 'agent->requester'; message: Msg } | { dir: 'note'; text: string };

const ajv = createAjv();
const types = catalogueTypes();
const transcripts = transcriptFixtures();
const byName = new Map(transcripts.map((t) => [t.name, t.lines as Line[]]));
const msgs = (name: string) => byName.get(name)!.flatMap((l) => (l.dir === 'note' ? [] : [{ dir: l.dir, m: l.message }]));
const fromAgent = (name: string) =>
  msgs(name)
    .filter((x) => x.dir === 'agent->requester')
    .map((x) => x.m);

describe('fixtures/transcripts', () => {
  it.each(REQUIRED_TRANSCRIPTS)('holds %s.ndjson', (name) => {
    expect(byName.has(name)).toBe(true);
  });

  it.each(transcripts.map((t) => [t.name, t.lines as Line[]] as const))('%s: every message passes the schema of its type', (_, lines) => {
    for (const line of lines) {
      expect(['requester->agent', 'agent->requester', 'note']).toContain(line.dir);
      if (line.dir === 'note') continue;
      expect(types).toContain(line.message.type);
      expect(validateWith(ajv, `${line.message.type}.schema.json`, line.message)).toBeNull();
    }
  });

  it.each(transcripts.map((t) => [t.name, t.lines] as const))('%s: obeys the history and reply rules (checkTranscript)', (_, lines) => {
    expect(checkTranscript(lines)).toEqual([]);
  });

  it.each(transcripts.map((t) => [t.name, t.lines as Line[]] as const))(
    '%s: carries session_id on everything from handshake.ready on',
    (_, lines) => {
      let ready = false;
      for (const line of lines) {
        if (line.dir === 'note') continue;
        const m = line.message;
        if (m.type === 'handshake.init') ready = false; // a new connection starts its handshake
        if (m.type === 'handshake.ready') ready = true;
        if (ready) expect(m.session_id, `${m.message_id} ${m.type}`).toBeTypeOf('string');
      }
    },
  );

  it.each(transcripts.map((t) => [t.name, t.lines as Line[]] as const))('%s: uses tap-conform and tap-reference-agent', (_, lines) => {
    const ids = new Set(lines.flatMap((l) => (l.dir === 'note' ? [] : [l.message.source, l.message.target])));
    expect(ids).toContain('tap-conform');
    expect(ids).toContain('tap-reference-agent');
  });
});

describe('fixtures/transcripts: what each one shows', () => {
  it('handshake: init (to "*") → ack → ready → go, with ready restating the final params', () => {
    const [init, ack, ready, go] = msgs('handshake').map((x) => x.m);
    expect([init!.type, ack!.type, ready!.type, go!.type]).toEqual(['handshake.init', 'handshake.ack', 'handshake.ready', 'handshake.go']);
    expect(init!.target).toBe('*');
    expect(ack!.reply_to).toBe(init!.message_id);
    expect(go!.reply_to).toBe(ready!.message_id);
    expect(ready!.payload.params).toEqual(ack!.payload.params);
    expect(ready!.session_id).toBe(ack!.payload.session_id);
  });

  it('resume-after-disconnect: the replayed messages are byte-identical to the originals (spec: tasks#replay)', () => {
    const all = msgs('resume-after-disconnect');
    const acks = all.filter((x) => x.m.type === 'handshake.ack').map((x) => x.m);
    expect(acks).toHaveLength(2);
    expect(acks[1]!.payload.resumed).toBe(true);
    expect(acks[1]!.payload.session_id).toBe(acks[0]!.payload.session_id);
    const init = all.filter((x) => x.m.type === 'handshake.init')[1]!.m;
    expect((init.payload.resume as { session_id: string }).session_id).toBe(acks[0]!.payload.session_id);
    const firstText = new Map<string, string>();
    let replays = 0;
    for (const { m } of all) {
      const text = JSON.stringify(m);
      const before = firstText.get(m.message_id);
      if (before === undefined) firstText.set(m.message_id, text);
      else {
        expect(text).toBe(before);
        replays++;
      }
    }
    expect(replays).toBeGreaterThanOrEqual(4);
  });

  it('idempotent-retry: retries get a snapshot of the original task and the counter runs once', () => {
    const agent = fromAgent('idempotent-retry');
    const counts = agent.filter((m) => m.type === 'task.result').map((m) => (m.payload.output as { count: number }).count);
    expect(counts).toEqual([1, 2]);
    const snaps = agent.filter((m) => m.type === 'task.snapshot');
    expect(snaps.length).toBeGreaterThanOrEqual(2);
    for (const s of snaps) expect(s.task_id).toBe('counter-1');
    expect(agent.some((m) => m.type === 'error' && m.payload.code === 'IDEMPOTENCY_CONFLICT')).toBe(true);
  });

  it('plan-revised: the revision names the plan it revises and the feedback, and changes something', () => {
    const subs = fromAgent('plan-revised').filter((m) => m.type === 'plan.submit');
    expect(subs).toHaveLength(2);
    const [first, rev] = subs.map((m) => m.payload as { plan: { plan_id: string }; revision_of?: string; feedback?: string });
    expect(rev!.revision_of).toBe(first!.plan.plan_id);
    expect(rev!.feedback).toBeTypeOf('string');
    expect(rev!.plan.plan_id).not.toBe(first!.plan.plan_id);
    const { plan_id: _a, ...a } = first!.plan;
    const { plan_id: _b, ...b } = rev!.plan;
    expect(b).not.toEqual(a);
  });

  it('plan-rejected and plan-holding: rejection fails the task, lateness only reminds', () => {
    const rejected = fromAgent('plan-rejected').find((m) => m.type === 'task.result')!;
    expect(rejected.payload).toMatchObject({ status: 'failed', error: { code: 'PLAN_REJECTED' } });
    const holding = fromAgent('plan-holding');
    expect(holding.filter((m) => m.payload.stage === 'plan.holding').length).toBeGreaterThanOrEqual(1);
    expect(holding.find((m) => m.type === 'task.result')!.payload.status).toBe('completed');
  });

  it('shutdown-handoff: response, then hand-off before each cancelled SHUTTING_DOWN result, then farewell last', () => {
    const agent = fromAgent('shutdown-handoff');
    const at = (pred: (m: Msg) => boolean) => agent.findIndex(pred);
    const response = at((m) => m.type === 'shutdown.response');
    expect(agent[response]!.payload.approve).toBe(true);
    for (const id of ['sleep-1', 'plan-1']) {
      const handoff = at((m) => m.type === 'task.handoff' && m.task_id === id);
      const result = at((m) => m.type === 'task.result' && m.task_id === id);
      expect(handoff).toBeGreaterThan(response);
      expect(result).toBeGreaterThan(handoff);
      expect(agent[result]!.payload).toMatchObject({ status: 'cancelled', error: { code: 'SHUTTING_DOWN', retryable: true } });
    }
    expect(agent.at(-1)!.type).toBe('session.farewell');
  });

  it('version-mismatch: UNSUPPORTED_VERSION, fatal, listing what is supported', () => {
    const [err] = fromAgent('version-mismatch');
    expect(err!.type).toBe('error');
    expect(err!.payload).toMatchObject({ code: 'UNSUPPORTED_VERSION', fatal: true, details: { supported: ['1.0'] } });
  });

  it('forged-source: forged messages have no effect, and a forged farewell does not end the session', () => {
    const all = msgs('forged-source');
    const forgedFarewell = all.findIndex((x) => x.m.type === 'session.farewell' && x.m.source !== 'tap-conform');
    expect(forgedFarewell).toBeGreaterThan(0);
    expect(all[forgedFarewell + 1]!.m.payload.code).toBe('IDENTITY_MISMATCH');
    const later = all.slice(forgedFarewell + 2);
    expect(later.some((x) => x.m.type === 'task.result' && x.m.payload.status === 'completed')).toBe(true);
    expect(later.some((x) => x.m.type === 'task.accepted' && x.m.task_id === 'counter-1')).toBe(true);
    expect(fromAgent('forged-source').filter((m) => m.type === 'session.farewell')).toEqual([]);
  });

  it('cancel-during-run: the direct reply to a cancel comes before its effects', () => {
    const agent = fromAgent('cancel-during-run');
    const snap = agent.findIndex((m) => m.type === 'task.snapshot');
    const cancelling = agent.findIndex((m) => m.type === 'task.event' && m.payload.state === 'cancelling');
    expect(snap).toBeGreaterThan(0);
    expect(cancelling).toBeGreaterThan(snap);
    expect(agent.find((m) => m.type === 'task.result' && m.task_id === 'sleep-1')!.payload).toEqual({ status: 'cancelled' });
  });
});
