/** Steps that several case files of the core profile share. */
import type { CaseContext } from '../../context.ts';
import type { Peer, Received } from '../../peer.ts';
import { checkError, need, require } from '../kit.ts';
import { harnessCard, initPayload } from '../../steps.ts';
import type { Wire } from '../../session-state.ts';

/** Opens a connection and sends one handshake.init; returns the peer and the reply. */
export async function initOnly(ctx: CaseContext, payload?: (peer: Peer) => Record<string, unknown>, extra: Record<string, unknown> = {}) {
  const peer = need(await ctx.connect());
  const sent = await peer.post('handshake.init', payload ? payload(peer) : initPayload(peer, {}), extra);
  const reply = need(await peer.reply(sent));
  return { peer, sent, reply };
}

export const ECHO = { capabilities: ['tap.test.echo'] };

/** Sends one frame (text, or raw bytes) and stops the case unless it is answered MALFORMED_MESSAGE. */
export async function expectMalformed(peer: Peer, frame: string | Uint8Array, why: string): Promise<void> {
  const mark = peer.mark();
  if (typeof frame === 'string') await peer.sendText(frame, why);
  else await peer.sendRaw(frame, why);
  const r = need(await peer.waitFor((m) => m.index >= mark && m.msg.type === 'error', `an error for ${why}`));
  require(checkError(r.msg, { code: 'MALFORMED_MESSAGE' }, why));
}

/** The error, if any, that answered `sent` (by reply_to), else the first error after `mark`. */
export async function answerTo(peer: Peer, sent: Wire, mark: number, what: string): Promise<Received> {
  return need(await peer.waitFor((r) => r.index >= mark && (r.msg.reply_to === sent.message_id || r.msg.type === 'error'), what));
}

/** The payload of a handshake.init whose card names another agent than its source. */
export function strangerInit(peer: Peer): Record<string, unknown> {
  return { ...initPayload(peer, {}), agent: harnessCard('somebody-else') };
}
