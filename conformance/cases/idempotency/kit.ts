/** Steps that several case files of the idempotency profile share. */
import type { Peer } from '../../peer.ts';
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
