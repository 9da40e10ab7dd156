/** Steps that several case files of the shutdown profile share. */
import type { Peer, Received } from '../../peer.ts';
import type { Wire } from '../../session-state.ts';
import { fail, type Outcome, unimplemented } from '../../verdict.ts';
import { need, PLAN, show } from '../kit.ts';
import { describeMessage, startTask, waitStream } from '../../steps.ts';
import type { CaseContext } from '../../context.ts';

export const SLEEP = { capabilities: ['tap.test.sleep'] };

/** Sends shutdown.request; returns the response (or the outcome if the agent declined). */
export async function requestShutdown(peer: Peer, graceMs: number): Promise<{ sent: Wire; response: Received } | Outcome> {
  const sent = await peer.post('shutdown.request', { reason: 'conformance test', grace_ms: graceMs });
  const response = need(await peer.reply(sent));
  if (response.msg.type !== 'shutdown.response')
    return fail(`shutdown.request was answered ${describeMessage(response.msg)}`, 'shutdown.response', describeMessage(response.msg));
  if (response.msg.payload.approve !== true) {
    return unimplemented(`the agent declined the shutdown (${show(response.msg.payload.reason)}), which it may do`);
  }
  return { sent, response };
}

/**
 * The reply to a message sent after an approved shutdown.request, or null when the agent's
 * farewell came first: an agent may hand off and say farewell at once (TAP-SHUT-007), and after
 * its farewell it answers nothing (TAP-SHUT-011). A missing reply with no farewell fails.
 */
export async function replyOrFarewell(peer: Peer, sent: Wire): Promise<Received | null> {
  const r = need(
    await peer.waitFor(
      (m) => m.msg.reply_to === sent.message_id || (m.msg.type === 'session.farewell' && m.conn === peer.conn),
      `a reply to ${sent.type} ${sent.message_id}, or the agent's session.farewell`,
    ),
  );
  return r.msg.type === 'session.farewell' && r.msg.reply_to !== sent.message_id ? null : r;
}

/** After a farewell nothing more of its session may arrive (TAP-SHUT-011); null when nothing did. */
export async function nothingAfterFarewell(ctx: CaseContext, peer: Peer): Promise<Outcome | null> {
  const farewell = peer.received.find((r) => r.msg.type === 'session.farewell' && r.conn === peer.conn && !r.resent);
  if (!farewell) return null;
  await peer.waitClosed(ctx.scaled(2000));
  const after = peer.received.find((r) => r.index > farewell.index && r.conn === farewell.conn && !r.resent);
  return after
    ? fail(
        `the agent sent ${describeMessage(after.msg)} after its session.farewell`,
        'nothing after the farewell',
        describeMessage(after.msg),
      )
    : null;
}

/**
 * The detail of a pass where the agent said farewell before it answered some of `total` requests
 * sent after the shutdown.request (`unanswered`, named for people).
 */
export function farewellFirst(unanswered: string[], total: number, answered: string): string {
  if (unanswered.length === 0) return answered;
  const names = unanswered.length === 1 ? unanswered[0]! : `${unanswered.slice(0, -1).join(', ')} and ${unanswered[unanswered.length - 1]}`;
  const why = 'as an agent that hands off at once may (TAP-SHUT-007), answering nothing after its farewell (TAP-SHUT-011)';
  return unanswered.length === total
    ? `the agent handed off and said farewell before answering ${names}, ${why}`
    : `${answered}, except ${names}: the agent said farewell first, ${why}`;
}

/**
 * A plan task held for its decision, then an approved shutdown.request followed at once by a
 * plan.decision (for `planId` when given, else the plan submitted): the peer, the task and the
 * decision sent, or the outcome when the agent declined the shutdown (which it may do).
 */
export async function decisionDuringShutdown(
  ctx: CaseContext,
  decision: 'approved' | 'rejected',
  feedback: string,
  planId?: string,
): Promise<{ peer: Peer; t: { taskId: string }; d: Wire } | { outcome: Outcome }> {
  const peer = need(await ctx.session());
  const t = need(await startTask(peer, 'tap.test.plan', { plan: PLAN }));
  const submit = need(await waitStream(peer, t.taskId, (m) => m.type === 'plan.submit', 'plan.submit'));
  const stop = await peer.post('shutdown.request', { reason: 'conformance test', grace_ms: 3000 });
  const d = await peer.post(
    'plan.decision',
    { plan_id: planId ?? submit.msg.payload.plan?.plan_id, decision, feedback },
    { task_id: t.taskId },
  );
  const resp = need(await peer.reply(stop));
  if (resp.msg.type === 'shutdown.response' && resp.msg.payload.approve !== true)
    return { outcome: unimplemented('the agent declined the shutdown, which it may do') };
  return { peer, t, d };
}

/** Waits for the agent's farewell and the close of the transport. */
export async function farewellAndClose(
  ctx: CaseContext,
  peer: Peer,
  allowanceMs: number,
): Promise<{ farewell: Received; closed: boolean }> {
  const farewell = need(await peer.waitFor((r) => r.msg.type === 'session.farewell', 'session.farewell', allowanceMs));
  const closed = await peer.waitClosed(ctx.scaled(5000));
  return { farewell, closed };
}
