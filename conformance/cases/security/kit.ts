/**
 * Steps that several case files of the security profile share: sessions of the run's tokens, the
 * refusal of a token, and the builders of the cases that differ in one value (a token refused, a
 * credential's identity as the principal).
 */
import { defineCase, type Case, type CaseHead, type Needs } from '../../case.ts';
import type { CaseContext } from '../../context.ts';
import type { Peer } from '../../peer.ts';
import { collectUntilResult, describeMessage, initPayload, startTask } from '../../steps.ts';
import { mintToken, type TokenClaims } from '../../tokens.ts';
import type { Outcome } from '../../verdict.ts';
import { check, checkError, need, status, verdictOf } from '../kit.ts';

export const TOKENS = { security: 'tokens' as const };

/** A subject of this case alone. */
export const subject = (ctx: CaseContext, label: string): string => `tap-conform.${ctx.ids.task(label)}`;

/** A session of a token with subject `sub` (and the run's scopes, unless `scope` says otherwise). */
export async function tokenSession(ctx: CaseContext, sub: string, scope?: string): Promise<Peer> {
  const token = await mintToken(ctx.env.security!.tokens!, { sub, ...(scope !== undefined ? { scope } : {}) });
  return need(await ctx.session({ credentials: { scheme: 'bearer', token } }));
}

/** A connection presenting nothing but the run's token `claims` (or none), and its reply to handshake.init. */
async function initWithToken(ctx: CaseContext, claims: TokenClaims | undefined) {
  const issuer = ctx.env.security!.tokens!;
  const credentials = claims ? { scheme: 'bearer', token: await mintToken(issuer, claims) } : 'none';
  const peer = need(await ctx.connect({ credentials }));
  const init = await peer.post('handshake.init', initPayload(peer, {}));
  return { peer, init, reply: await peer.reply(init) };
}

/** Checks a refused token: AUTH_REQUIRED, fatal, answering the init, then the transport closed and no session. */
async function tokenRefused(ctx: CaseContext, claims: TokenClaims | undefined, what: string): Promise<Outcome | null> {
  const { peer, init, reply } = await initWithToken(ctx, claims);
  if (!reply.ok) return reply.outcome;
  const refused = checkError(reply.value.msg, { code: 'AUTH_REQUIRED', fatal: true, replyTo: init.message_id }, `a handshake.init ${what}`);
  if (refused) return refused;
  const closed = await peer.waitClosed(ctx.scaled(5000));
  return check(closed, `the transport stayed open after AUTH_REQUIRED answered a handshake.init ${what}`, 'closed', 'open after 5 s');
}

/** A token the agent must refuse: its claims (undefined: no credentials at all), and what it is, as the verdict says. */
export type RefusedToken = readonly [claims: TokenClaims | undefined, what: string];

/**
 * A case of tokens an agent that requires them refuses with a fatal AUTH_REQUIRED, closing the
 * transport (spec: handshake#credentials, security#bearer-tokens): each of `tokens` in turn.
 */
export function refusedTokensCase(head: CaseHead, tokens: (ctx: CaseContext) => RefusedToken[], verdict = 'refused'): Case {
  return defineCase({
    ...head,
    profile: 'security',
    needs: TOKENS,
    run: async (ctx) => {
      const outcomes: (Outcome | null)[] = [];
      for (const [claims, what] of tokens(ctx)) outcomes.push(await tokenRefused(ctx, claims, what));
      return verdictOf(verdict, ...outcomes);
    },
  });
}

/** Checks that `owner`'s running task is visible to `same` and answers UNKNOWN_TASK to `other`, then ends it. */
async function visibility(owner: Peer, same: Peer, other: Peer, taskId: string, how: string): Promise<Outcome> {
  const seen = need(await status(same, taskId));
  const unseen = need(await status(other, taskId));
  const cancel = await owner.post('task.cancel', {}, { task_id: taskId });
  need(await owner.reply(cancel));
  need(await collectUntilResult(owner, taskId));
  return verdictOf(
    `one principal per ${how}`,
    check(
      seen.msg.type === 'task.snapshot',
      `another session of the same ${how} does not see the task`,
      'task.snapshot',
      describeMessage(seen.msg),
    ),
    checkError(unseen.msg, { code: 'UNKNOWN_TASK' }, `task.status from a session of another ${how}`),
  );
}

/** The three sessions of a principal case: one, another of the same credential, one of another credential. */
export interface PrincipalSessions {
  owner: Peer;
  same: Peer;
  other: Peer;
}

/**
 * A case that a credential's identity is the principal (`how` names the credential): a task of
 * one session is seen by another session of the same identity and answers UNKNOWN_TASK to a
 * session of another (spec: authorization#task-visibility).
 */
export function principalCase(head: CaseHead, needs: Needs, how: string, sessions: (ctx: CaseContext) => Promise<PrincipalSessions>): Case {
  return defineCase({
    ...head,
    profile: 'security',
    needs: { ...needs, capabilities: ['tap.test.sleep'] },
    run: async (ctx) => {
      const { owner, same, other } = await sessions(ctx);
      const t = need(await startTask(owner, 'tap.test.sleep', { ms: 30_000 }));
      return visibility(owner, same, other, t.taskId, how);
    },
  });
}
