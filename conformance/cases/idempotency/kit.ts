/** Steps that several case files of the idempotency profile share. */
import type { Peer, Received } from '../../peer.ts';
import type { Wire } from '../../session-state.ts';
import { collectUntilResult } from '../../steps.ts';
import { need, runTask } from '../kit.ts';

export const COUNTER = { capabilities: ['tap.test.counter'] };

/** Reads the counter of `key` by running it once more; returns the count after that run. */
export async function countAfter(peer: Peer, key: string): Promise<number> {
  const t = need(await runTask(peer, 'tap.test.counter', { key }));
  return Number(t.result.msg.payload.output?.count);
}

/** A counter key unique to this case run. */
export function freshKey(peer: Peer): string {
  return `k-${peer.ids.task('key')}`;
}

/** Runs one tap.test.counter task under a fresh key; returns the key, the request and its direct reply. */
export async function countOnce(peer: Peer): Promise<{ key: string; req: Wire; first: Received }> {
  const key = freshKey(peer);
  const req = peer.envelope('task.request', { capability: 'tap.test.counter', input: { key } }, { task_id: peer.ids.task() });
  await peer.send(req);
  const first = need(await peer.reply(req));
  need(await collectUntilResult(peer, req.task_id!));
  return { key, req, first };
}
