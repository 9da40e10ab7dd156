/**
 * Liveness and orphaned sessions: a peer gone after three unanswered pings, the immediate loss of
 * a stdio session, and the end of an orphaned session's tasks when its resume window passes
 * (spec: limits#heartbeats, bindings-stdio#session, resume#orphans).
 */
import { defineCase, type Case } from '../case.ts';
import type { CaseContext } from '../context.ts';
import type { Received } from '../peer.ts';
import { describeMessage, startTask } from '../steps.ts';
import { between, fail, judgeOccurrence, pass, skipped, timingWindow, type Observed, type Outcome } from '../verdict.ts';
import { check, verdictOf } from './kit.ts';

/** The longest heartbeat this scenario waits through: four of them pass before the peer is gone. */
const MAX_HEARTBEAT = 10_000;

interface GoneScenario {
  heartbeat: number;
  /** When the agent declared the harness gone, after the last message it heard from it. */
  goneAt?: Observed;
  /** Pings the agent sent before that. */
  pings: number;
  /** The task's result, if the agent sent one. */
  result?: Received;
  /** Every message the agent sent about the task. */
  stream?: Received[];
  /** Whether the agent closed the transport (a stdio agent: exited) when it gave up. */
  closed: boolean;
  problem?: Outcome;
}

/**
 * The harness stops answering pings while a task runs: the agent pings every heartbeat_ms and,
 * after three unanswered pings, treats the transport as lost: a WebSocket agent closes the
 * connection; a stdio agent ends its tasks with SESSION_LOST at once.
 */
async function goneScenario(ctx: CaseContext): Promise<GoneScenario> {
  const s = await ctx.sessionWith({ params: { heartbeat_ms: 1000 } });
  if (!s.ok) return { heartbeat: 0, pings: 0, closed: false, problem: s.outcome };
  const peer = s.value.peer;
  const heartbeat = Number(peer.state.params?.heartbeat_ms);
  if (!(heartbeat <= MAX_HEARTBEAT))
    return {
      heartbeat,
      pings: 0,
      closed: false,
      problem: skipped(`heartbeat_ms is ${heartbeat}; four heartbeats of silence are too long to wait for in a conformance run`),
    };
  // The agent last heard from us when it received this request: between its send and the arrival
  // of task.accepted.
  peer.answerPings = false;
  ctx.note('the harness stops answering pings');
  const requested = ctx.transcript.now();
  const t = await startTask(peer, 'tap.test.sleep', { ms: 600_000 });
  if (!t.ok) return { heartbeat, pings: 0, closed: false, problem: t.outcome };
  const accepted = t.value.accepted.at;
  const nominal = heartbeat * 4;
  const w = timingWindow(nominal, ctx.env.timeScale);
  const ended = (r: Received) => r.msg.type === 'task.result' && r.msg.task_id === t.value.taskId;
  const result = await peer.poll(ended, w.latestMs + 500);
  if (!result && !peer.closed) await peer.waitClosed(1000);
  const at = result ? result.at : peer.closed ? peer.closed.at : undefined;
  const pings = peer.received.filter(
    (r) => r.msg.type === 'ping' && r.index > t.value.accepted.index && (at === undefined || r.at <= at),
  ).length;
  return {
    heartbeat,
    pings,
    result,
    stream: peer.received.filter((r) => r.msg.task_id === t.value.taskId),
    closed: peer.closed !== undefined,
    goneAt: at === undefined ? undefined : between(at - accepted, at - requested),
  };
}

/** The orphan scenario: a dropped WebSocket connection whose session is never resumed. */
async function orphanScenario(ctx: CaseContext): Promise<{ window: number; at?: Observed; snapshot?: Received; problem?: Outcome }> {
  const s = await ctx.sessionWith({ signed: true });
  if (!s.ok) return { window: 0, problem: s.outcome };
  const { peer, hs } = s.value;
  const window = Number(hs.ack.msg.payload.resume_window_ms);
  if (!(window <= 20_000))
    return { window, problem: skipped(`resume_window_ms is ${window}; an orphaned session that lives that long is not waited for`) };
  const t = await startTask(peer, 'tap.test.sleep', { ms: 600_000 });
  if (!t.ok) return { window, problem: t.outcome };
  (ctx.connectionOf(peer)?.transport as { terminate?: () => void } | undefined)?.terminate?.();
  const dropped = Date.now();
  await peer.waitClosed(ctx.scaled(3000));
  const w = timingWindow(window, ctx.env.timeScale);
  // A new session of the same principal (the same key) watches the orphaned task.
  const watcher = await ctx.session({ signed: true });
  if (!watcher.ok) return { window, problem: watcher.outcome };
  const deadline = dropped + w.latestMs;
  while (Date.now() < deadline) {
    const sent = await watcher.value.post('task.status', {}, { task_id: t.value.taskId });
    const r = await watcher.value.reply(sent);
    if (!r.ok) return { window, problem: r.outcome };
    if (r.value.msg.type === 'task.snapshot' && r.value.msg.payload.result) return { window, at: Date.now() - dropped, snapshot: r.value };
    if (r.value.msg.type !== 'task.snapshot')
      return {
        window,
        problem: fail(
          `another session of the same principal asked about the orphaned task and got ${describeMessage(r.value.msg)}`,
          'task.snapshot',
          describeMessage(r.value.msg),
        ),
      };
    await ctx.sleep(500);
  }
  return { window };
}

export const livenessCases: Case[] = [
  defineCase({
    id: 'core.limits.peer-gone',
    title: 'A peer that leaves three pings in a row unanswered is considered gone, and not before',
    profile: 'core',
    requirements: ['TAP-LIM-009'],
    needs: { capabilities: ['tap.test.sleep'] },
    budgetMs: 140_000,
    run: async (ctx) => {
      const r = await ctx.shared('peer-gone', goneScenario);
      if (r.problem) return r.problem;
      const o = judgeOccurrence(
        timingWindow(r.heartbeat * 4, ctx.env.timeScale),
        r.goneAt,
        'the loss of the transport after three unanswered pings',
      );
      if (o.verdict !== 'PASS') return o;
      return verdictOf(
        o.detail,
        check(r.pings >= 3, `the agent gave up after ${r.pings} unanswered pings`, 'three unanswered pings first', `${r.pings}`),
      );
    },
  }),
  defineCase({
    id: 'stdio.session-lost',
    title:
      'A stdio agent that loses its peer to missed heartbeats ends the session at once: its tasks end SESSION_LOST, with no resume window',
    profile: 'stdio',
    requirements: ['TAP-STDIO-005', 'TAP-TASK-007'],
    needs: { capabilities: ['tap.test.sleep'], binding: 'stdio' },
    budgetMs: 140_000,
    run: async (ctx) => {
      const r = await ctx.shared('peer-gone', goneScenario);
      if (r.problem) return r.problem;
      // The transport counts as lost, so the results need not reach the requester; but the
      // session must end now: either the task's result says SESSION_LOST or the agent exits.
      if (!r.result) {
        return r.closed
          ? pass('the agent ended the session at once (it exited; the SESSION_LOST results went to no one)')
          : fail(
              'after three unanswered pings the agent neither ended the task nor the session',
              'task.result cancelled SESSION_LOST, or the end of the process',
              'the agent keeps running',
            );
      }
      const p = r.result.msg.payload;
      return verdictOf(
        'SESSION_LOST',
        check(
          p.status === 'cancelled' && p.error?.code === 'SESSION_LOST',
          'the task of the lost session did not end cancelled with SESSION_LOST',
          'task.result cancelled SESSION_LOST',
          describeMessage(r.result.msg),
        ),
      );
    },
  }),
  defineCase({
    id: 'resume.orphan.session-lost',
    title: 'When the resume window of an orphaned session passes, its tasks end cancelled with SESSION_LOST',
    profile: 'streaming-resume',
    requirements: ['TAP-RES-014', 'TAP-RES-013'],
    needs: { capabilities: ['tap.test.sleep'], binding: 'websocket', integrity: true },
    budgetMs: 70_000,
    run: async (ctx) => {
      const r = await ctx.shared('orphan', orphanScenario);
      if (r.problem) return r.problem;
      const o = judgeOccurrence(timingWindow(r.window, ctx.env.timeScale), r.at, 'the end of the orphaned task');
      if (o.verdict !== 'PASS') return o;
      const res = r.snapshot!.msg.payload.result;
      return verdictOf(
        o.detail,
        check(
          res?.status === 'cancelled' && res?.error?.code === 'SESSION_LOST',
          'the orphaned task did not end cancelled with SESSION_LOST',
          'cancelled SESSION_LOST',
          JSON.stringify(res),
        ),
      );
    },
  }),
  defineCase({
    id: 'stdio.session-lost.cancelling',
    title: 'A running task ended SESSION_LOST on stdio passes through cancelling, as every cancelled ending does',
    profile: 'stdio',
    requirements: ['TAP-TASK-041'],
    needs: { capabilities: ['tap.test.sleep'], binding: 'stdio' },
    budgetMs: 140_000,
    run: async (ctx) => {
      const r = await ctx.shared('peer-gone', goneScenario);
      if (r.problem) return r.problem;
      if (!r.result) return pass('the agent exited at once; no result reached the requester to judge');
      const stream = r.stream ?? [];
      const states = stream.filter((m) => m.msg.type === 'task.event' && m.msg.payload?.kind === 'state').map((m) => m.msg.payload.state);
      if (!states.includes('running')) return pass('the task was still accepted, which ends cancelled directly');
      return verdictOf(
        'running → cancelling → cancelled',
        check(
          states[states.length - 1] === 'cancelling',
          'a running task ended cancelled SESSION_LOST without passing through cancelling',
          'a state event cancelling before the result',
          `state events ${states.join(', ')}, then ${describeMessage(r.result.msg)}`,
        ),
      );
    },
  }),
];
