/**
 * Liveness and orphaned sessions, observed once and judged by cases of several profiles: a peer
 * gone after three unanswered pings, and the end of an orphaned session's tasks when its resume
 * window passes (spec: limits#heartbeats, bindings-stdio#session, resume#orphans).
 */
import { between, type Observed, type Outcome, skipped, timingWindow } from '../verdict.ts';
import type { Received } from '../peer.ts';
import type { CaseContext } from '../context.ts';
import { startTask } from '../steps.ts';
import { cutShort } from './kit.ts';

/** The longest heartbeat this scenario waits through: four of them pass before the peer is gone. */
export const MAX_HEARTBEAT = 10_000;

/** What an agent does to get the cases that wait out its heartbeats. */
export const HEARTBEAT_HINT = `An agent that takes a heartbeat_ms of ${MAX_HEARTBEAT} or less gets this case (an agent of runAgent: runAgent({ card, capabilities, heartbeatMs: 1000 }) or its command line's --heartbeat-ms 1000; tap-reference-agent takes 1000)`;

export interface GoneScenario {
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
export async function goneScenario(ctx: CaseContext): Promise<GoneScenario> {
  const s = await ctx.sessionWith({ params: { heartbeat_ms: 1000 } });
  if (!s.ok) return { heartbeat: 0, pings: 0, closed: false, problem: s.outcome };
  const peer = s.value.peer;
  const heartbeat = Number(peer.state.params?.heartbeat_ms);
  if (!(heartbeat <= MAX_HEARTBEAT))
    return {
      heartbeat,
      pings: 0,
      closed: false,
      problem: skipped(
        `heartbeat_ms is ${heartbeat} (the harness proposed 1000); four heartbeats of silence are too long to wait for in a conformance run. ${HEARTBEAT_HINT}`,
      ),
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
  if (result?.msg.payload?.status === 'timed_out')
    return { heartbeat, pings: 0, closed: false, problem: cutShort(peer, 'four heartbeats of silence had passed') };
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
