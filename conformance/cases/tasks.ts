/** Tasks profile: the lifecycle, events, sequences, results, deadlines and limits (spec: tasks). */
import { defineCase, type Case } from '../case.ts';
import type { CaseContext } from '../context.ts';
import type { Peer } from '../peer.ts';
import { canTransition, isTerminal } from '../schemas.ts';
import { collectUntilResult, describeMessage, request, startTask } from '../steps.ts';
import { between, fail, judgeOccurrence, judgePunctuality, pass, skipped, timingWindow, type Observed, type Outcome } from '../verdict.ts';
import {
  check,
  checkError,
  expectNoTask,
  expectNothing,
  jsonEqual,
  need,
  outputsOf,
  require,
  runTask,
  show,
  statesOf,
  status,
  verdictOf,
} from './kit.ts';

const P = 'tasks' as const;
const cap = (...names: string[]) => ({ capabilities: names.map((n) => `tap.test.${n}`) });

/** Checks a list of announced states is a legal walk from accepted to a terminal state. */
export function checkWalk(states: string[], context: string): Outcome | null {
  if (states[0] !== 'accepted')
    return fail(`${context}: the stream does not start with task.accepted`, 'accepted first', states.join(' → '));
  for (let i = 1; i < states.length; i++) {
    if (!canTransition(states[i - 1]!, states[i]!)) {
      return fail(
        `${context}: ${states[i - 1]} → ${states[i]} is not in the state table (or a state event is missing)`,
        'only transitions listed in task-states.json, each announced',
        states.join(' → '),
      );
    }
  }
  const last = states[states.length - 1]!;
  if (!isTerminal(last))
    return fail(`${context}: the stream does not end in a terminal state`, 'a terminal state last', states.join(' → '));
  return null;
}

/** The timeout scenario: a long sleep with timeout_ms; when did the timed_out result come? */
async function timeoutScenario(ctx: CaseContext, timeoutMs: number): Promise<{ at?: Observed; result?: string; problem?: Outcome }> {
  const s = await ctx.session();
  if (!s.ok) return { problem: s.outcome };
  const peer = s.value;
  const sentAt = Date.now();
  const t = await startTask(peer, 'tap.test.sleep', { ms: 600_000 }, { timeoutMs });
  if (!t.ok) return { problem: t.outcome };
  const acceptedAt = Date.now();
  const w = timingWindow(timeoutMs, ctx.env.timeScale);
  const r = await peer.poll((m) => m.msg.type === 'task.result' && m.msg.task_id === t.value.taskId, w.latestMs + 200);
  if (!r) return {};
  const p = r.msg.payload;
  if (p.status !== 'timed_out')
    return {
      problem: fail(`a sleep task past its timeout_ms ended ${describeMessage(r.msg)}`, 'task.result timed_out', describeMessage(r.msg)),
    };
  if (p.error?.code !== 'DEADLINE_EXCEEDED')
    return { problem: fail('a timed_out task does not carry DEADLINE_EXCEEDED', 'error DEADLINE_EXCEEDED', show(p.error)) };
  // The agent received the request between our send and the arrival of task.accepted.
  const now = Date.now();
  return { at: between(now - acceptedAt, now - sentAt), result: describeMessage(r.msg) };
}

/**
 * Builds an echo request whose task.request fits max_message_bytes while the task.result echoing
 * it would not, calibrated on a first small echo (spec: tasks#result).
 */
async function tooLargeProbe(peer: Peer, max: number): Promise<Outcome> {
  // Task ids of equal length, so the two results differ only in their output.
  const small = need(await runTask(peer, 'tap.test.echo', 'a'.repeat(100), { taskId: peer.ids.task('big') }));
  const resultOverhead = Buffer.byteLength(small.result.text) - 100;
  // Our own request overhead, measured on the same message we will send, with a short id.
  const probeReq = peer.envelope(
    'task.request',
    { capability: 'tap.test.echo', input: '' },
    { task_id: peer.ids.task('big'), message_id: 'q' },
  );
  const requestOverhead = Buffer.byteLength(JSON.stringify(probeReq));
  // A result longer than the request by some bytes: send a request exactly at the limit.
  const k = max - requestOverhead;
  if (resultOverhead + k < max + 3) {
    return skipped(
      `the agent's result envelope (${resultOverhead} bytes around the output) is not larger than the harness's request envelope (${requestOverhead}), so no echo request can fit while its result does not`,
    );
  }
  const req = { ...probeReq, payload: { capability: 'tap.test.echo', input: 'a'.repeat(k) } };
  await peer.send(req);
  const reply = need(await peer.reply(req));
  if (reply.msg.type === 'error')
    return fail(
      `the agent refused a request of exactly max_message_bytes (${max}): ${describeMessage(reply.msg)}`,
      'task.accepted',
      describeMessage(reply.msg),
    );
  const r = need(await collectUntilResult(peer, req.task_id!));
  const p = r.result.msg.payload;
  return verdictOf(
    `a ${resultOverhead + k}-byte result over a ${max}-byte limit ended failed MESSAGE_TOO_LARGE`,
    check(
      p.status === 'failed' && p.error?.code === 'MESSAGE_TOO_LARGE',
      'a result larger than max_message_bytes was not replaced by failed MESSAGE_TOO_LARGE',
      'task.result failed MESSAGE_TOO_LARGE',
      describeMessage(r.result.msg),
    ),
  );
}

/** A message_id of the longest allowed length, 128 characters, unique to this peer. */
function longestMessageId(peer: Peer): string {
  return peer.ids.message().padEnd(128, '.');
}

/**
 * Sends an echo whose task.result just fits in `max` while a snapshot carrying it would not;
 * the agent must then end the task failed MESSAGE_TOO_LARGE, or answer task.status with a
 * snapshot that fits (spec: tasks#result-size).
 */
async function snapshotSizeProbe(peer: Peer, max: number): Promise<Outcome> {
  const small = need(await runTask(peer, 'tap.test.echo', 'a'.repeat(100), { taskId: peer.ids.task('big') }));
  const resultOverhead = Buffer.byteLength(small.result.text) - 100;
  const ask = await peer.post('task.status', {}, { task_id: small.taskId, message_id: longestMessageId(peer) });
  const snap = need(await peer.reply(ask));
  if (snap.msg.type !== 'task.snapshot')
    return fail('task.status of a completed task was not answered with a snapshot', 'task.snapshot', describeMessage(snap.msg));
  const snapshotOverhead = Buffer.byteLength(snap.text) - 100;
  const probeReq = peer.envelope(
    'task.request',
    { capability: 'tap.test.echo', input: '' },
    { task_id: peer.ids.task('big'), message_id: 'q2' },
  );
  const requestOverhead = Buffer.byteLength(JSON.stringify(probeReq));
  const k = Math.min(max - resultOverhead, max - requestOverhead);
  if (!(snapshotOverhead + k > max)) {
    return skipped(
      `no echo request fits whose result fits but whose snapshot does not (overheads: request ${requestOverhead}, result ${resultOverhead}, snapshot ${snapshotOverhead} bytes)`,
    );
  }
  const req = { ...probeReq, payload: { capability: 'tap.test.echo', input: 'a'.repeat(k) } };
  await peer.send(req);
  const reply = need(await peer.reply(req));
  if (reply.msg.type === 'error')
    return fail(
      `the agent refused a request of ${Buffer.byteLength(JSON.stringify(req))} bytes`,
      'task.accepted',
      describeMessage(reply.msg),
    );
  const r = need(await collectUntilResult(peer, req.task_id!));
  const p = r.result.msg.payload;
  if (p.status === 'failed' && p.error?.code === 'MESSAGE_TOO_LARGE')
    return pass('the result would not fit in a snapshot: failed MESSAGE_TOO_LARGE');
  const again = await peer.post('task.status', {}, { task_id: req.task_id, message_id: longestMessageId(peer) });
  const s2 = need(await peer.reply(again));
  const bytes = Buffer.byteLength(s2.text);
  return verdictOf(
    `the ${describeMessage(r.result.msg)} fits in its snapshot`,
    check(
      bytes <= max,
      `the agent kept a result that fits in task.result but sent a ${bytes}-byte snapshot over a ${max}-byte limit`,
      `task.result failed MESSAGE_TOO_LARGE, or a snapshot of at most ${max} bytes`,
      `${describeMessage(s2.msg)} of ${bytes} bytes`,
    ),
  );
}

export const taskCases: Case[] = [
  defineCase({
    id: 'tasks.lifecycle.echo',
    title: 'An echo task: accepted (sequence 1), running, completed with output = input',
    profile: P,
    spec: 'tasks#overview',
    reason: "an echo task is the lifecycle the Overview describes; its first requirement is the state table's (TAP-TASK-005)",
    requirements: ['TAP-TASK-005', 'TAP-EVT-001', 'TAP-EVT-003', 'TAP-EVT-004', 'TAP-CONF-009'],
    needs: cap('echo'),
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const input = { text: 'Café au lait, €3.50\n"to go"', n: [1, 2.5, -3], nested: { ok: true, none: null } };
      const t = need(await runTask(peer, 'tap.test.echo', input));
      const p = t.result.msg.payload;
      return verdictOf(
        'accepted → running → completed',
        checkWalk(statesOf(t.stream), 'echo'),
        check(p.status === 'completed', 'the echo task did not complete', 'completed', describeMessage(t.result.msg)),
        check(jsonEqual(p.output, input), 'the echo output differs from the input', show(input), show(p.output)),
        check(p.error === undefined, 'a completed result carries an error', 'no error', show(p.error)),
      );
    },
  }),
  defineCase({
    id: 'tasks.events.state-per-transition',
    title: 'Every transition but into accepted, awaiting_approval or a terminal state is announced by a state event',
    profile: P,
    requirements: ['TAP-EVT-001', 'TAP-TASK-005'],
    needs: cap('sleep', 'fail', 'stream'),
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const runs = [
        need(await runTask(peer, 'tap.test.sleep', { ms: 50 })),
        need(await runTask(peer, 'tap.test.fail', { code: 'INTERNAL_ERROR' })),
        need(await runTask(peer, 'tap.test.stream', { count: 2 })),
      ];
      for (const r of runs) require(checkWalk(statesOf(r.stream), r.sent.payload.capability));
      return pass('each walk was legal and fully announced');
    },
  }),
  defineCase({
    id: 'tasks.result.exactly-one',
    title: 'Concurrent tasks each get exactly one result, and nothing follows it',
    profile: P,
    requirements: ['TAP-TASK-007'],
    needs: cap('echo', 'stream', 'sleep'),
    // Two echoes, a stream and a sleep, started back to back.
    tasks: 4,
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const started = [
        need(await startTask(peer, 'tap.test.echo', 1)),
        need(await startTask(peer, 'tap.test.stream', { count: 5, interval_ms: 10 })),
        need(await startTask(peer, 'tap.test.sleep', { ms: 100 })),
        need(await startTask(peer, 'tap.test.echo', [2])),
      ];
      for (const t of started) need(await collectUntilResult(peer, t.taskId));
      await peer.barrier(300);
      const problems: string[] = [];
      for (const t of started) {
        const results = peer.received.filter((r) => !r.resent && r.msg.type === 'task.result' && r.msg.task_id === t.taskId);
        if (results.length !== 1) problems.push(`${t.taskId} got ${results.length} results`);
      }
      return verdictOf(
        'one result each',
        check(problems.length === 0, problems.join('; '), 'exactly one task.result per task', problems.join('; ')),
      );
    },
  }),
  defineCase({
    id: 'tasks.stream.output-events',
    title: 'tap.test.stream sends count output events { index, chunk } in order, then output { count }',
    profile: P,
    requirements: ['TAP-CONF-009', 'TAP-EVT-005'],
    needs: cap('stream'),
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const t = need(await runTask(peer, 'tap.test.stream', { count: 4, interval_ms: 5, chunk: { c: 'x' } }));
      const data = outputsOf(t.stream).map((m) => m.payload.data);
      const want = [0, 1, 2, 3].map((index) => ({ index, chunk: { c: 'x' } }));
      return verdictOf(
        '4 output events, then { count: 4 }',
        check(jsonEqual(data, want), 'the output events differ from { index, chunk } for index 0..3', show(want), show(data)),
        check(
          jsonEqual(t.result.msg.payload.output, { count: 4 }),
          'the result output is not { count: 4 }',
          '{"count":4}',
          show(t.result.msg.payload.output),
        ),
      );
    },
  }),
  defineCase({
    id: 'tasks.stream.no-chunk',
    title: 'tap.test.stream without chunk sends events { index } without a chunk member',
    profile: P,
    requirements: ['TAP-CONF-009'],
    needs: cap('stream'),
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const t = need(await runTask(peer, 'tap.test.stream', { count: 2 }));
      const data = outputsOf(t.stream).map((m) => m.payload.data);
      return verdictOf(
        '{ index } only',
        check(
          jsonEqual(data, [{ index: 0 }, { index: 1 }]),
          'events without chunk should be { index } only',
          '[{"index":0},{"index":1}]',
          show(data),
        ),
      );
    },
  }),
  defineCase({
    id: 'tasks.stream.streaming-false',
    title: 'With streaming: false negotiated, no output events are sent; the result still comes',
    profile: P,
    requirements: ['TAP-EVT-002'],
    needs: cap('stream'),
    run: async (ctx) => {
      const peer = need(await ctx.session({ params: { streaming: false } }));
      const t = need(await runTask(peer, 'tap.test.stream', { count: 3 }));
      const outs = outputsOf(t.stream);
      return verdictOf(
        'no output events, result { count: 3 }',
        check(
          outs.length === 0,
          `${outs.length} output events were sent in a session with streaming: false`,
          'no output events',
          `${outs.length} output events`,
        ),
        check(t.result.msg.payload.status === 'completed', 'the task did not complete', 'completed', describeMessage(t.result.msg)),
      );
    },
  }),
  defineCase({
    id: 'tasks.stream.capability-not-streaming',
    title: 'No output events for a capability declaring streaming: false',
    profile: P,
    requirements: ['TAP-EVT-002'],
    needs: cap('echo', 'sleep'),
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const declared = new Map<string, boolean>(
        (peer.state.card?.capabilities ?? []).map((c: { name: string; streaming: boolean }) => [c.name, c.streaming]),
      );
      const problems: string[] = [];
      for (const [name, input] of [
        ['tap.test.echo', { v: 1 }],
        ['tap.test.sleep', { ms: 20 }],
      ] as const) {
        const t = need(await runTask(peer, name, input));
        if (declared.get(name) === false && outputsOf(t.stream).length > 0)
          problems.push(`${name} declares streaming: false but sent output events`);
      }
      return verdictOf('none sent', check(problems.length === 0, problems.join('; '), 'no output events', problems.join('; ')));
    },
  }),
  defineCase({
    id: 'tasks.fail.error',
    title: 'tap.test.fail ends failed with the given code, message, and the registry retryable by default',
    profile: P,
    requirements: ['TAP-CONF-009'],
    needs: cap('fail'),
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const a = need(await runTask(peer, 'tap.test.fail', { code: 'INTERNAL_ERROR', message: 'boom' }));
      const b = need(await runTask(peer, 'tap.test.fail', { code: 'INTERNAL_ERROR', retryable: false }));
      const c = need(await runTask(peer, 'tap.test.fail', { code: 'A_FUTURE_CODE' }));
      const ea = a.result.msg.payload.error;
      return verdictOf(
        'failed as asked',
        check(
          a.result.msg.payload.status === 'failed' && ea?.code === 'INTERNAL_ERROR',
          'the task did not end failed INTERNAL_ERROR',
          'failed INTERNAL_ERROR',
          describeMessage(a.result.msg),
        ),
        check(
          ea?.retryable === true,
          'INTERNAL_ERROR did not default to the registry retryable (true)',
          'retryable true',
          show(ea?.retryable),
        ),
        check(ea?.message === 'boom', 'the given message was not kept', '"boom"', show(ea?.message)),
        check(
          b.result.msg.payload.error?.retryable === false,
          'an explicit retryable: false was not kept',
          'retryable false',
          show(b.result.msg.payload.error?.retryable),
        ),
        check(
          c.result.msg.payload.status === 'failed' && c.result.msg.payload.error?.code === 'A_FUTURE_CODE',
          'an unregistered code was not passed through',
          'failed A_FUTURE_CODE',
          describeMessage(c.result.msg),
        ),
      );
    },
  }),
  defineCase({
    id: 'tasks.result.shape',
    title: 'Results carry output or error exactly as their status requires',
    profile: P,
    requirements: ['TAP-TASK-008'],
    needs: cap('echo', 'fail'),
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const ok = need(await runTask(peer, 'tap.test.echo', null));
      const bad = need(await runTask(peer, 'tap.test.fail', { code: 'PLAN_REJECTED' }));
      return verdictOf(
        'completed with output (even null), failed with error',
        check(
          'output' in ok.result.msg.payload && ok.result.msg.payload.output === null && !('error' in ok.result.msg.payload),
          'a completed echo of null must carry "output": null and no error',
          '{ status: completed, output: null }',
          show(ok.result.msg.payload),
        ),
        check(
          bad.result.msg.payload.error !== undefined && bad.result.msg.payload.output === undefined,
          'a failed result must carry error (and no output here)',
          '{ status: failed, error }',
          show(bad.result.msg.payload),
        ),
      );
    },
  }),
  defineCase({
    id: 'tasks.sleep.completes',
    title: 'tap.test.sleep waits and ends with { slept_ms }',
    profile: P,
    requirements: ['TAP-CONF-009'],
    needs: cap('sleep'),
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const t0 = Date.now();
      const t = need(await runTask(peer, 'tap.test.sleep', { ms: 150 }));
      const took = Date.now() - t0;
      const out = t.result.msg.payload.output;
      return verdictOf(
        `slept ${out?.slept_ms} ms`,
        check(typeof out?.slept_ms === 'number', 'the output has no slept_ms', '{ slept_ms: number }', show(out)),
        check(took >= 140, `the result came after ${took} ms, before the 150 ms sleep could end`, '≥ 150 ms', `${took} ms`),
      );
    },
  }),
  defineCase({
    id: 'tasks.timeout.occurrence',
    title: 'A task past its timeout_ms ends timed_out with DEADLINE_EXCEEDED, never before the deadline',
    profile: P,
    requirements: ['TAP-TASK-015', 'TAP-TASK-010'],
    needs: cap('sleep'),
    budgetMs: 15_000,
    run: async (ctx) => {
      const r = await ctx.shared('task-timeout', (c) => timeoutScenario(c, 600));
      if (r.problem) return r.problem;
      return judgeOccurrence(timingWindow(600, ctx.env.timeScale), r.at, 'the timed_out result of a task with timeout_ms 600');
    },
  }),
  defineCase({
    id: 'tasks.timeout.punctual',
    title: 'A task past its timeout_ms ends timed_out punctually',
    profile: P,
    requirements: ['TAP-TASK-016'],
    needs: cap('sleep'),
    budgetMs: 15_000,
    run: async (ctx) => {
      const r = await ctx.shared('task-timeout', (c) => timeoutScenario(c, 600));
      if (r.problem) return r.problem;
      return judgePunctuality(timingWindow(600, ctx.env.timeScale), r.at, 'the timed_out result of a task with timeout_ms 600');
    },
  }),
  defineCase({
    id: 'tasks.deadline.past',
    title: 'A task.request already past its deadline gets DEADLINE_EXCEEDED and creates no task',
    profile: P,
    requirements: ['TAP-TASK-014'],
    needs: cap('echo'),
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const taskId = peer.ids.task();
      const { sent, reply } = await request(peer, 'tap.test.echo', 1, { taskId, deadline: new Date(Date.now() - 600_000).toISOString() });
      require(checkError(need(reply).msg, { code: 'DEADLINE_EXCEEDED', replyTo: sent.message_id, taskId }, 'a deadline ten minutes past'));
      return verdictOf('refused, no task', await expectNoTask(peer, taskId, 'the late request was refused'));
    },
  }),
  defineCase({
    id: 'tasks.deadline.effective',
    title: 'The effective deadline is the earliest of the envelope deadline, receipt + timeout_ms and receipt + max_task_seconds',
    profile: P,
    spec: 'tasks#deadlines',
    reason: "the effective deadline is defined in Deadlines; the rule it checks is task.accepted's deadline member (TAP-TASK-003)",
    requirements: ['TAP-TASK-003'],
    needs: cap('echo'),
    // Three echo tasks with different deadlines, which may all run at once.
    tasks: 3,
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const now = Date.now();
      const envelopeDeadline = new Date(now + 45_000).toISOString();
      const a = need(await startTask(peer, 'tap.test.echo', 1, { deadline: envelopeDeadline, timeoutMs: 3_600_000 }));
      const b = need(await startTask(peer, 'tap.test.echo', 2, { deadline: new Date(now + 3_600_000).toISOString(), timeoutMs: 20_000 }));
      const maxTask = Number(peer.state.card?.limits?.max_task_seconds) * 1000;
      const c = need(await startTask(peer, 'tap.test.echo', 3));
      const da = Date.parse(a.accepted.msg.payload.deadline);
      const db = Date.parse(b.accepted.msg.payload.deadline);
      const dc = Date.parse(c.accepted.msg.payload.deadline);
      const near = (x: number, y: number) => Math.abs(x - y) <= 5_000 * ctx.env.timeScale;
      return verdictOf(
        'the earliest bound wins each time',
        check(
          da <= Date.parse(envelopeDeadline) && near(da, Date.parse(envelopeDeadline)),
          'with an envelope deadline 45 s ahead and timeout_ms of an hour, the effective deadline is not the envelope deadline',
          envelopeDeadline,
          show(a.accepted.msg.payload.deadline),
        ),
        check(
          near(db, now + 20_000),
          'with timeout_ms 20 000 and a deadline an hour ahead, the effective deadline is not receipt + 20 s',
          new Date(now + 20_000).toISOString(),
          show(b.accepted.msg.payload.deadline),
        ),
        check(
          !Number.isFinite(maxTask) || near(dc, now + maxTask) || dc <= now + maxTask,
          'without deadline or timeout_ms, the effective deadline is not receipt + max_task_seconds',
          new Date(now + maxTask).toISOString(),
          show(c.accepted.msg.payload.deadline),
        ),
      );
    },
  }),
  defineCase({
    id: 'tasks.request-timeout.no-end',
    title: "A requester's request_timeout_ms never ends a task",
    profile: P,
    requirements: ['TAP-TASK-017'],
    needs: cap('sleep'),
    run: async (ctx) => {
      const peer = need(await ctx.session({ params: { request_timeout_ms: 200 } }));
      const t = need(await runTask(peer, 'tap.test.sleep', { ms: 900 }, { resultTimeoutMs: ctx.scaled(10_000) }));
      return verdictOf(
        'completed after request_timeout_ms',
        check(
          t.result.msg.payload.status === 'completed',
          'a task outliving request_timeout_ms did not complete',
          'completed',
          describeMessage(t.result.msg),
        ),
      );
    },
  }),
  defineCase({
    id: 'tasks.result.too-large',
    title: 'A result that would exceed max_message_bytes ends failed with MESSAGE_TOO_LARGE instead',
    profile: P,
    requirements: ['TAP-TASK-009'],
    needs: cap('echo'),
    run: async (ctx) => {
      const max = 8192;
      const peer = need(await ctx.session({ params: { max_message_bytes: max } }));
      if (peer.state.params?.max_message_bytes !== max)
        return fail('the agent did not accept max_message_bytes 8192', '8192', show(peer.state.params?.max_message_bytes));
      return tooLargeProbe(peer, max);
    },
  }),
  defineCase({
    id: 'tasks.snapshot.running',
    title: 'A snapshot of a running task shows it as it stands, with last_sequence the last sequence sent and no result',
    profile: P,
    requirements: ['TAP-TASK-011', 'TAP-TASK-012'],
    needs: cap('sleep'),
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const t = need(await startTask(peer, 'tap.test.sleep', { ms: 30_000 }));
      need(
        await peer.waitFor(
          (r) => r.msg.task_id === t.taskId && r.msg.type === 'task.event' && r.msg.payload?.state === 'running',
          'the running state event',
        ),
      );
      const r = need(await status(peer, t.taskId));
      const lastSeen = peer.state.lastSequence(t.taskId);
      const cancel = await peer.post('task.cancel', {}, { task_id: t.taskId });
      need(await peer.reply(cancel));
      need(await collectUntilResult(peer, t.taskId));
      if (r.msg.type !== 'task.snapshot')
        return fail(`task.status was answered ${describeMessage(r.msg)}`, 'task.snapshot', describeMessage(r.msg));
      const p = r.msg.payload;
      return verdictOf(
        `running, last_sequence ${p.last_sequence}`,
        check(p.state === 'running', 'the snapshot does not show the running state', 'running', show(p.state)),
        check(p.last_sequence === lastSeen, 'last_sequence is not the last sequence already sent', String(lastSeen), show(p.last_sequence)),
        check(p.result === undefined, 'a non-terminal snapshot carries a result', 'no result', show(p.result)),
        check(
          typeof p.created_at === 'string' && typeof p.updated_at === 'string' && p.created_at <= p.updated_at,
          'created_at / updated_at missing or out of order',
          'created_at ≤ updated_at',
          `${p.created_at} / ${p.updated_at}`,
        ),
      );
    },
  }),
  defineCase({
    id: 'tasks.concurrency.busy',
    title: 'Beyond the negotiated max_concurrent_tasks a request gets BUSY (retryable)',
    profile: P,
    requirements: ['TAP-LIM-004'],
    needs: cap('sleep', 'echo'),
    // One sleep, and the request the session limit refuses (or a broken agent runs).
    tasks: 2,
    run: async (ctx) => {
      const peer = need(await ctx.session({ params: { max_concurrent_tasks: 1 } }));
      if (peer.state.params?.max_concurrent_tasks !== 1)
        return fail('the agent did not accept max_concurrent_tasks 1', '1', show(peer.state.params?.max_concurrent_tasks));
      const first = need(await startTask(peer, 'tap.test.sleep', { ms: 30_000 }));
      const taskId = peer.ids.task();
      const { sent, reply } = await request(peer, 'tap.test.echo', 'second', { taskId });
      const bad = checkError(
        need(reply).msg,
        { code: 'BUSY', replyTo: sent.message_id, taskId },
        'a second task with max_concurrent_tasks 1',
      );
      const cancel = await peer.post('task.cancel', {}, { task_id: first.taskId });
      need(await peer.reply(cancel));
      need(await collectUntilResult(peer, first.taskId));
      require(bad);
      require(await expectNoTask(peer, taskId, 'the BUSY request was refused'));
      need(await runTask(peer, 'tap.test.echo', 'after'));
      return pass('BUSY at the limit; accepted again once the first task ended');
    },
  }),
  defineCase({
    id: 'tasks.input-schema',
    title: 'A conformance capability refuses input not of its documented form with INVALID_MESSAGE, creating no task',
    profile: P,
    requirements: ['TAP-CONF-010', 'TAP-TASK-004'],
    needs: cap('sleep', 'stream', 'fail', 'counter'),
    run: async (ctx) => {
      const peer = need(await ctx.session());
      for (const [name, input] of [
        ['tap.test.sleep', { ms: 'soon' }],
        ['tap.test.stream', { interval_ms: 5 }],
        ['tap.test.fail', { retryable: true }],
        ['tap.test.counter', { key: 42 }],
      ] as const) {
        const taskId = peer.ids.task();
        const { reply } = await request(peer, name, input, { taskId });
        const m = need(reply).msg;
        if (m.type === 'task.accepted') need(await collectUntilResult(peer, taskId));
        require(checkError(m, { code: 'INVALID_MESSAGE', taskId }, `${name} with input ${show(input)}`));
        require(await expectNoTask(peer, taskId, `the ${name} request was refused`));
      }
      return pass('each refused with INVALID_MESSAGE');
    },
  }),
  defineCase({
    id: 'tasks.after-terminal.quiet',
    title: 'Once terminal, a task gets no further stream messages, even after status and resume requests',
    profile: P,
    requirements: ['TAP-TASK-006'],
    needs: cap('echo'),
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const t = need(await runTask(peer, 'tap.test.echo', 'done'));
      const mark = peer.mark();
      need(await status(peer, t.taskId));
      return verdictOf(
        'quiet after the result',
        await expectNothing(
          peer,
          mark,
          (r) => !r.resent && r.msg.task_id === t.taskId && r.msg.sequence !== undefined,
          'a terminal task must add nothing to its stream',
        ),
      );
    },
  }),
  defineCase({
    id: 'tasks.result.snapshot-size',
    title: 'A result that fits in task.result but not in a snapshot ends failed MESSAGE_TOO_LARGE, so every snapshot fits',
    profile: P,
    requirements: ['TAP-TASK-040'],
    needs: cap('echo'),
    run: async (ctx) => {
      const max = 8192;
      const peer = need(await ctx.session({ params: { max_message_bytes: max } }));
      if (peer.state.params?.max_message_bytes !== max)
        return fail('the agent did not accept max_message_bytes 8192', '8192', show(peer.state.params?.max_message_bytes));
      return snapshotSizeProbe(peer, max);
    },
  }),
  defineCase({
    id: 'tasks.input-forms',
    title: 'A conformance capability accepts every input of its documented form, bounds included, and refuses values out of range',
    profile: P,
    requirements: ['TAP-CONF-040', 'TAP-CONF-010'],
    needs: cap('echo', 'sleep', 'stream', 'fail', 'counter'),
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const accepted: [string, unknown][] = [
        ['tap.test.echo', null],
        ['tap.test.stream', { count: 0 }],
        ['tap.test.stream', { count: 1, interval_ms: 0, chunk: null, 'x-conform-extra': true }],
        ['tap.test.sleep', { ms: 0 }],
        ['tap.test.fail', { code: 'A_CODE_FROM_LATER_MINOR' }],
        ['tap.test.fail', { code: 'INTERNAL_ERROR', retryable: false, message: 'm'.repeat(8192) }],
        ['tap.test.counter', { key: '' }],
        ['tap.test.counter', { key: 'k'.repeat(256) }],
      ];
      for (const [name, input] of accepted) {
        const { reply } = await request(peer, name, input);
        const m = need(reply).msg;
        require(
          check(m.type === 'task.accepted', `${name} refused the valid input ${show(input, 80)}`, 'task.accepted', describeMessage(m)),
        );
        need(await collectUntilResult(peer, m.task_id!));
      }
      const refused: [string, unknown][] = [
        ['tap.test.stream', { count: 100001 }],
        ['tap.test.stream', { count: 1.5 }],
        ['tap.test.stream', { count: 1, interval_ms: -1 }],
        ['tap.test.stream', 3],
        ['tap.test.sleep', { ms: -1 }],
        ['tap.test.fail', { code: 'lowercase' }],
        ['tap.test.fail', { code: 'A'.repeat(65) }],
        ['tap.test.fail', { code: 'INTERNAL_ERROR', retryable: 'yes' }],
        ['tap.test.counter', { key: 'k'.repeat(257) }],
      ];
      for (const [name, input] of refused) {
        const taskId = peer.ids.task();
        const { reply } = await request(peer, name, input, { taskId });
        const m = need(reply).msg;
        // An accepted out-of-range task may run long; it is cancelled, and the case fails on it.
        if (m.type === 'task.accepted') await peer.post('task.cancel', {}, { task_id: taskId });
        require(checkError(m, { code: 'INVALID_MESSAGE', taskId }, `${name} with input ${show(input, 80)}`));
      }
      return pass(`${accepted.length} inputs at the bounds accepted, ${refused.length} outside them refused`);
    },
  }),
];
