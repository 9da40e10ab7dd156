/** Steps that several case files of the tasks profile share. */
import type { CaseContext } from '../../context.ts';
import type { Peer } from '../../peer.ts';
import { fail, type Outcome } from '../../verdict.ts';
import { need, show } from '../kit.ts';

export const cap = (...names: string[]) => ({ capabilities: names.map((n) => `tap.test.${n}`) });

/** The max_message_bytes of the result-size cases: small enough that an echo can pass it. */
const SMALL_MAX = 8192;

/** Runs `probe` in a session whose max_message_bytes is 8 192 bytes; a FAIL when the agent does not accept that limit. */
export async function withSmallMessages(ctx: CaseContext, probe: (peer: Peer, max: number) => Promise<Outcome>): Promise<Outcome> {
  const peer = need(await ctx.session({ params: { max_message_bytes: SMALL_MAX } }));
  if (peer.state.params?.max_message_bytes !== SMALL_MAX)
    return fail(`the agent did not accept max_message_bytes ${SMALL_MAX}`, String(SMALL_MAX), show(peer.state.params?.max_message_bytes));
  return probe(peer, SMALL_MAX);
}
