/** Steps that several case files of the integrity profile share. */
import type { CaseContext } from '../../context.ts';
import type { Peer } from '../../peer.ts';
import { check, checkError, expectNoTask, need, require, show } from '../kit.ts';
import type { Wire } from '../../session-state.ts';
import { signMessage } from '../../mac.ts';
import { initPayload } from '../../steps.ts';

export const SIGNED = { integrity: true };

/** A signed session (the harness id is the key's peer). */
export async function signed(ctx: CaseContext): Promise<Peer> {
  return need(await ctx.session({ signed: true }));
}

/** Signs `msg` with the session key, then lets `tamper` change it. */
export function signedThen(peer: Peer, msg: Wire, tamper: (m: Wire) => Wire): Wire {
  const key = peer.state.integrity!;
  return tamper(signMessage(msg as unknown as Record<string, unknown>, key.key, key.keyId) as unknown as Wire);
}

/** Sends a task.request that must have no effect, and checks the error and that no task exists. */
export async function refusedRequest(peer: Peer, tamper: (m: Wire) => Wire, code: string | string[], why: string): Promise<void> {
  const taskId = peer.ids.task();
  const m = signedThen(peer, peer.envelope('task.request', { capability: 'tap.test.echo', input: why }, { task_id: taskId }), tamper);
  await peer.send(m, { deliberate: why, sign: false });
  const r = need(await peer.reply(m));
  require(checkError(r.msg, { code, replyTo: m.message_id }, why));
  require(await expectNoTask(peer, taskId, `the ${why} request was refused`));
}

/** Opens a connection and sends a handshake.init built by `build`; returns the reply and the peer. */
export async function initWith(ctx: CaseContext, build: (peer: Peer) => Wire, selfId?: string) {
  const peer = need(await ctx.connect({ selfId }));
  const m = build(peer);
  await peer.send(m, { deliberate: 'a handshake.init built by the case' });
  return { peer, sent: m, reply: need(await peer.reply(m)) };
}

/** Checks an error answering a handshake.init that proposed integrity: unsigned, fatal, then closed. */
export async function unsignedFatal(ctx: CaseContext, peer: Peer, m: Wire, codes: string[], why: string) {
  require(checkError(m, { code: codes, fatal: true }, why));
  require(
    check(
      m.signature === undefined,
      'an error answering a handshake.init that proposed integrity is signed',
      'an unsigned error',
      show(m.signature),
    ),
  );
  const closed = await peer.waitClosed(ctx.scaled(5000));
  require(check(closed, 'the transport stayed open after the fatal handshake error', 'closed', 'open after 5 s'));
}

/** A handshake.init proposing integrity under `keyId`, signed with `key` when one is given. */
export function integrityInit(p: Peer, keyId: string, key?: Uint8Array): Wire {
  const init = p.envelope('handshake.init', initPayload(p, { params: { integrity: { alg: 'hmac-sha256', key_id: keyId } } }));
  return key ? (signMessage(init as unknown as Record<string, unknown>, key, keyId) as unknown as Wire) : init;
}
