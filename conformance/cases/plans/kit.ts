/** Steps that several case files of the plans profile share. */
import type { Peer, Received } from '../../peer.ts';
import { need, PLAN } from '../kit.ts';
import { startTask, waitStream } from '../../steps.ts';

export const PLAN_CAP = { capabilities: ['tap.test.plan'] };

/** Starts a plan task and waits for its plan.submit. */
export async function submitted(peer: Peer, timeoutMs?: number): Promise<{ taskId: string; submit: Received }> {
  const t = need(await startTask(peer, 'tap.test.plan', { plan: PLAN }, timeoutMs ? { timeoutMs } : {}));
  const submit = need(await waitStream(peer, t.taskId, (m) => m.type === 'plan.submit', 'plan.submit'));
  return { taskId: t.taskId, submit };
}

export async function decide(
  peer: Peer,
  taskId: string,
  planId: string,
  decision: string,
  feedback = 'conformance decision',
): Promise<Received> {
  const sent = await peer.post('plan.decision', { plan_id: planId, decision, feedback }, { task_id: taskId });
  return need(await peer.reply(sent));
}
