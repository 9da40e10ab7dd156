/** Steps that several case files of the cancellation profile share. */
import type { Peer, Received } from '../../peer.ts';
import { check, need, show } from '../kit.ts';
import { describeMessage, startTask, waitStream } from '../../steps.ts';
import type { Outcome } from '../../verdict.ts';

export const cap = (...names: string[]) => ({ capabilities: names.map((n) => `tap.test.${n}`) });

/** Starts a long sleep and waits until it is running. */
export async function runningSleep(peer: Peer): Promise<string> {
  const t = need(await startTask(peer, 'tap.test.sleep', { ms: 60_000 }));
  need(
    await waitStream(
      peer,
      t.taskId,
      (m) => m.type === 'task.event' && m.payload?.kind === 'state' && m.payload.state === 'running',
      'the running state event',
    ),
  );
  return t.taskId;
}

export async function cancel(peer: Peer, taskId: string): Promise<{ sent: ReturnType<Peer['envelope']>; reply: Received }> {
  const sent = await peer.post('task.cancel', { reason: 'conformance test' }, { task_id: taskId });
  return { sent, reply: need(await peer.reply(sent)) };
}

/** Checks a cancelled result: status cancelled, neither output nor error. */
export function checkCancelled(m: Received['msg']): Outcome | null {
  const p = m.payload;
  return firstOf(
    check(p.status === 'cancelled', 'the cancelled task did not end cancelled', 'task.result cancelled', describeMessage(m)),
    check(
      p.output === undefined && p.error === undefined,
      'a cancelled result carries output or error',
      '{ status: "cancelled" } only',
      show(p),
    ),
  );
}

export function firstOf(...o: (Outcome | null)[]): Outcome | null {
  return o.find((x) => x) ?? null;
}
