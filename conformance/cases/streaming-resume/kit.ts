/** Steps that several case files of the streaming-resume profile share. */
import type { CaseContext } from '../../context.ts';
import type { Peer } from '../../peer.ts';
import { need } from '../kit.ts';
import { handshake } from '../../steps.ts';

export const STREAM = { capabilities: ['tap.test.stream'] };

/** Opens a second connection of the same session: handshake.init with resume. */
export async function reconnect(ctx: CaseContext, old: Peer, tasks: { task_id: string; last_sequence: number }[], token?: string) {
  const state = old.state;
  // A resume with a wrong token starts a session of its own: it must not share the old one's state.
  const peer = need(await ctx.connect(token === undefined ? { state } : {}));
  const hs = need(await handshake(peer, { resume: { session_id: state.sessionId!, resume_token: token ?? state.resumeToken!, tasks } }));
  return { peer, ack: hs.ack };
}
