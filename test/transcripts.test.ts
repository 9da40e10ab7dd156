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

describe('fixtures/transcripts of TAP 1.1: what each one shows', () => {
  const V11 = ['quiet-task', 'input-required', 'task-listing', 'extension-required', 'trace-context'];

  it.each(V11)('%s: offers ["1.1","1.0"], negotiates 1.1, and speaks tap/1.1 from the ack on (spec: versioning#tap-1-1)', (name) => {
    const all = msgs(name).map((x) => x.m);
    expect(all[0]!.payload.versions).toEqual(['1.1', '1.0']);
    const ack = all.findIndex((m) => m.type === 'handshake.ack');
    expect(all[ack]!.payload.version).toBe('1.1');
    for (const m of all.slice(ack)) expect(m.protocol, `${m.message_id} ${m.type}`).toBe('tap/1.1');
  });

  it('quiet-task: no acceptance and no event, the first message at sequence 2, a snapshot before it at last_sequence 1 (TAP-QUIET-101, 103)', () => {
    const all = msgs('quiet-task');
    const quiet = all.filter((x) => x.dir === 'requester->agent' && x.m.type === 'task.request' && x.m.payload.quiet === true);
    const ids = new Set(quiet.map((x) => x.m.task_id as string));
    expect(ids.size).toBe(3);
    const agent = fromAgent('quiet-task');
    for (const id of ids) {
      const stream = agent.filter((m) => m.task_id === id && typeof m.sequence === 'number');
      expect(stream.map((m) => m.type)).toContain('task.result');
      expect(stream.some((m) => m.type === 'task.accepted' || m.type === 'task.event')).toBe(false);
      expect(stream[0]!.sequence).toBe(2);
    }
    // No direct reply answers a quiet request that creates its task.
    for (const x of quiet) expect(agent.some((m) => m.reply_to === x.m.message_id)).toBe(false);
    const early = agent.find((m) => m.type === 'task.snapshot' && m.payload.state === 'running')!;
    expect(early.payload.last_sequence).toBe(1);
  });

  it('quiet-task: a duplicate of a quiet request re-sends the result byte for byte (TAP-QUIET-104)', () => {
    const lines = byName.get('quiet-task')!;
    const texts = lines.flatMap((l) =>
      l.dir === 'agent->requester' && l.message.type === 'task.result' ? [JSON.stringify(l.message)] : [],
    );
    expect(texts.length).toBe(4);
    expect(new Set(texts).size).toBe(3);
    const requests = lines.flatMap((l) =>
      l.dir === 'requester->agent' && l.message.type === 'task.request' ? [l.message.message_id] : [],
    );
    expect(requests.length - new Set(requests).size).toBe(1);
  });

  it('input-required: input_required then input.request; a wrong answer → INVALID_ANSWER; the right one → snapshot, running, completed (spec: tasks#input-required)', () => {
    const all = msgs('input-required').map((x) => x.m);
    const kinds = all.map((m) => (m.type === 'task.event' ? `state:${m.payload.state}` : m.type));
    const at = (k: string, from = 0) => kinds.indexOf(k, from);
    expect(at('state:input_required')).toBeLessThan(at('input.request'));
    const request = all[at('input.request')]!;
    const answers = all.filter((m) => m.type === 'input.response');
    expect(answers.map((m) => m.payload.request_id)).toEqual([request.payload.request_id, request.payload.request_id]);
    const replyTo = (m: Msg) => all.find((r) => r.reply_to === m.message_id)!;
    expect(replyTo(answers[0]!).type).toBe('error');
    expect(replyTo(answers[0]!).payload.code).toBe('INVALID_ANSWER');
    expect(replyTo(answers[0]!).payload.details).toHaveProperty('issues');
    const snapshot = replyTo(answers[1]!);
    expect(snapshot.type).toBe('task.snapshot');
    expect(snapshot.payload.state).toBe('input_required');
    expect(all.indexOf(snapshot)).toBeLessThan(at('state:running', all.indexOf(snapshot)));
    const result = all.find((m) => m.type === 'task.result')!;
    expect(result.payload).toEqual({ status: 'completed', output: { answer: answers[1]!.payload.answer } });
    const status = all.find((m) => m.type === 'task.snapshot' && m.reply_to !== answers[1]!.message_id)!;
    expect(status.payload.input_request).toEqual({
      request_id: request.payload.request_id,
      prompt: request.payload.prompt,
      schema: request.payload.schema,
    });
  });

  it('task-listing: two pages through the cursor list every task once, oldest first; a filter lists the running one (spec: tasks#listing)', () => {
    const all = msgs('task-listing').map((x) => x.m);
    const created = all.filter((m) => m.type === 'task.request').map((m) => m.task_id);
    const lists = all.filter((m) => m.type === 'task.list');
    const page = (req: Msg) => all.find((m) => m.reply_to === req.message_id)!;
    const [first, second, filtered] = lists.map(page);
    expect([first, second, filtered].map((p) => p!.type)).toEqual(['task.page', 'task.page', 'task.page']);
    expect(lists[1]!.payload.cursor).toBe(first!.payload.next_cursor);
    expect(second!.payload).not.toHaveProperty('next_cursor');
    const listed = [first!, second!].flatMap((p) => (p.payload.tasks as Msg[]).map((t) => t.task_id));
    expect(listed).toEqual(created);
    expect((filtered!.payload.tasks as Msg[]).map((t) => [t.task_id, t.state])).toEqual([['sleep-1', 'running']]);
    // The capability's own failure (spec: errors#capability-failed): failed, CAPABILITY_FAILED, not retryable, and listed so.
    const failed = all.find((m) => m.type === 'task.result' && m.payload.status === 'failed')!;
    expect(failed.payload.error).toMatchObject({ code: 'CAPABILITY_FAILED', retryable: false });
    expect((first!.payload.tasks as Msg[]).find((t) => t.task_id === failed.task_id)?.state).toBe('failed');
  });

  it('extension-required: a required extension the agent lacks → EXTENSION_REQUIRED, not fatal, naming it; then a session with none (spec: handshake#negotiated-extensions)', () => {
    const all = msgs('extension-required').map((x) => x.m);
    const [init, refusal, retry, ack] = all;
    const required = ((init!.payload.agent as Msg).extensions as Msg[]).filter((e) => e.required === true).map((e) => e.uri);
    expect(refusal!.type).toBe('error');
    expect(refusal!.reply_to).toBe(init!.message_id);
    expect(refusal!.payload).toMatchObject({ code: 'EXTENSION_REQUIRED', fatal: false, details: { missing: required } });
    expect(retry!.type).toBe('handshake.init');
    expect(ack!.type).toBe('handshake.ack');
    expect(ack!.payload.extensions).toEqual([]);
  });

  it('trace-context: every message of the task stream carries the request traceparent and tracestate (TAP-TRACE-103, 104)', () => {
    const all = msgs('trace-context').map((x) => x.m);
    const request = all.find((m) => m.type === 'task.request')!;
    const trace = request.metadata as Msg;
    expect(trace.traceparent).toBe(`00-${trace.trace_id}-${trace.span_id}-01`);
    const stream = fromAgent('trace-context').filter((m) => m.task_id === request.task_id && typeof m.sequence === 'number');
    expect(stream.length).toBeGreaterThan(3);
    for (const m of stream) expect(m.metadata).toEqual(trace);
    for (const m of all.filter((x) => x.type === 'task.status')) expect(m.metadata).toEqual(trace);
  });
});
