/**
 * Security profile: client certificates over wss:// and bearer tokens in the JWT form, for an
 * agent that requires them. It applies when the run is given the material: the client
 * certificates and authorities of a wss:// agent, or the private key of the token issuer the
 * agent trusts (spec: security#client-certificates, security#bearer-tokens).
 */
import { X509Certificate } from 'node:crypto';
import { alternativeNames } from '../../reference/transports/tls.ts';
import { defineCase, type Case } from '../case.ts';
import type { CaseContext } from '../context.ts';
import type { Peer } from '../peer.ts';
import { collectUntilResult, describeMessage, grant, initPayload, request, startTask } from '../steps.ts';
import { mintToken, type TokenClaims } from '../tokens.ts';
import { pass, type Outcome } from '../verdict.ts';
import { selfSignedClientCertificate, type CertificateNames } from '../x509.ts';
import { attempt, check, checkError, need, require, status, verdictOf } from './kit.ts';

const P = 'security' as const;
const CERTIFICATE = { security: 'client-certificate' as const, binding: 'websocket' as const };
const TOKENS = { security: 'tokens' as const };

/** The names of a PEM certificate, so that an untrusted copy can claim the same identity. */
function namesOf(pem: string): CertificateNames {
  const x = new X509Certificate(pem);
  const names: CertificateNames = { cn: /(?:^|\n)CN=([^\n]*)/.exec(x.subject)?.[1] };
  for (const [kind, value] of alternativeNames(x.subjectAltName)) {
    if (kind === 'URI') (names.uri ??= []).push(value);
    else if (kind === 'DNS') (names.dns ??= []).push(value);
    else if (kind === 'email') (names.email ??= []).push(value);
  }
  return names;
}

/**
 * Tries to open a session over a connection with `tls`: PASS when the agent refuses before any
 * session exists (the TLS handshake fails, the upgrade is answered with an HTTP error, or the
 * handshake.init is refused), FAIL when a handshake.ack comes.
 */
async function refusedBeforeSession(ctx: CaseContext, tls: { ca?: string; cert?: string; key?: string }, what: string): Promise<Outcome> {
  // The run's own certificate opens a session: a refusal below is the agent's judgement, not an agent out of reach.
  need(await ctx.session());
  const c = await ctx.connect({ tls });
  if (!c.ok) {
    ctx.note(`the connection ${what} was refused: ${c.outcome.observed ?? c.outcome.detail}`);
    return pass(`refused before any session: ${c.outcome.observed ?? c.outcome.detail}`);
  }
  const peer = c.value;
  const init = await peer.post('handshake.init', initPayload(peer, {}));
  const r = await peer.reply(init, ctx.scaled(5000));
  if (!r.ok) {
    const closed = await peer.waitClosed(ctx.scaled(1000));
    return closed ? pass('the connection closed before any session') : r.outcome;
  }
  return verdictOf(
    'the handshake was refused',
    check(
      r.value.msg.type !== 'handshake.ack',
      `the agent opened a session over a connection ${what}`,
      'a refusal before any session: a failed TLS handshake, an HTTP error, or an error answering handshake.init',
      describeMessage(r.value.msg),
    ),
  );
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

/** A session of a token with subject `sub` (and the run's scopes, unless `scope` says otherwise). */
async function tokenSession(ctx: CaseContext, sub: string, scope?: string): Promise<Peer> {
  const token = await mintToken(ctx.env.security!.tokens!, { sub, ...(scope !== undefined ? { scope } : {}) });
  return need(await ctx.session({ credentials: { scheme: 'bearer', token } }));
}

/** A subject of this case alone. */
const subject = (ctx: CaseContext, label: string): string => `tap-conform.${ctx.ids.task(label)}`;

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

export const securityCases: Case[] = [
  defineCase({
    id: 'security.tls.no-certificate',
    title: 'An agent that requires client certificates refuses a connection without one, before any session',
    level: 'MUST',
    profile: P,
    spec: 'security#client-certificates',
    requirements: ['TAP-SEC-007'],
    needs: CERTIFICATE,
    run: attempt(async (ctx) => {
      const ca = ctx.env.security!.ca;
      return refusedBeforeSession(ctx, ca !== undefined ? { ca } : {}, 'without a client certificate');
    }),
  }),
  defineCase({
    id: 'security.tls.untrusted-certificate',
    title: "An agent that requires client certificates refuses one no authority it trusts signed, even one naming the run's identity",
    level: 'MUST',
    profile: P,
    spec: 'security#client-certificates',
    requirements: ['TAP-SEC-007'],
    needs: CERTIFICATE,
    run: attempt(async (ctx) => {
      const sec = ctx.env.security!;
      const names = namesOf(sec.clients[0]!.cert);
      const forged = selfSignedClientCertificate(names);
      ctx.note(`a self-signed certificate naming ${JSON.stringify(names)}`);
      return refusedBeforeSession(
        ctx,
        { ...(sec.ca !== undefined ? { ca: sec.ca } : {}), ...forged },
        'with a self-signed client certificate',
      );
    }),
  }),
  defineCase({
    id: 'security.tls.principal',
    title: "A client certificate's identity is the principal: the same certificate shares tasks, another sees none",
    level: 'MUST',
    profile: P,
    spec: 'security#client-certificates',
    requirements: ['TAP-SEC-008', 'TAP-AUTH-003'],
    needs: { ...CERTIFICATE, security: 'two-client-certificates', capabilities: ['tap.test.sleep'] },
    run: attempt(async (ctx) => {
      const a = need(await ctx.session());
      const again = need(await ctx.session());
      const b = need(await ctx.session({ principal: 'another' }));
      const t = need(await startTask(a, 'tap.test.sleep', { ms: 30_000 }));
      return visibility(a, again, b, t.taskId, 'client certificate');
    }),
  }),
  defineCase({
    id: 'security.token.required',
    title: 'An agent that requires bearer tokens answers a handshake.init without one with a fatal AUTH_REQUIRED and closes',
    level: 'MUST',
    profile: P,
    spec: 'handshake#credentials',
    requirements: ['TAP-HS-020', 'TAP-ERR-005'],
    needs: TOKENS,
    run: attempt(async (ctx) => verdictOf('refused', await tokenRefused(ctx, undefined, 'without credentials'))),
  }),
  defineCase({
    id: 'security.token.expired',
    title: 'A token that expired an hour ago is refused with AUTH_REQUIRED',
    level: 'MUST',
    profile: P,
    spec: 'security#bearer-tokens',
    requirements: ['TAP-SEC-009', 'TAP-HS-020'],
    needs: TOKENS,
    run: attempt(async (ctx) => {
      const exp = Math.floor(Date.now() / 1000) - 3600;
      return verdictOf('refused', await tokenRefused(ctx, { sub: subject(ctx, 'expired'), exp }, 'with an expired token'));
    }),
  }),
  defineCase({
    id: 'security.token.foreign',
    title: 'A token of another issuer, or for another audience, is refused with AUTH_REQUIRED',
    level: 'MUST',
    profile: P,
    spec: 'security#bearer-tokens',
    requirements: ['TAP-SEC-009'],
    needs: TOKENS,
    run: attempt(async (ctx) => {
      const issuer = ctx.env.security!.tokens!;
      return verdictOf(
        'both refused',
        await tokenRefused(ctx, { sub: subject(ctx, 'iss'), iss: `${issuer.issuer}.elsewhere` }, 'with a token of another issuer'),
        await tokenRefused(ctx, { sub: subject(ctx, 'aud'), aud: `${issuer.audience}.elsewhere` }, 'with a token for another audience'),
      );
    }),
  }),
  defineCase({
    id: 'security.token.bad-signature',
    title: "A token signed by a key other than the issuer's is refused with AUTH_REQUIRED",
    level: 'MUST',
    profile: P,
    spec: 'security#bearer-tokens',
    requirements: ['TAP-SEC-009'],
    needs: TOKENS,
    run: attempt(async (ctx) =>
      verdictOf('refused', await tokenRefused(ctx, { sub: subject(ctx, 'forged'), forged: true }, 'with a token signed by another key')),
    ),
  }),
  defineCase({
    id: 'security.token.principal',
    title: "A token's subject is the principal: tokens of one subject share tasks, another subject sees none",
    level: 'MUST',
    profile: P,
    spec: 'security#bearer-tokens',
    requirements: ['TAP-SEC-010', 'TAP-AUTH-003'],
    needs: { ...TOKENS, binding: 'websocket', capabilities: ['tap.test.sleep'] },
    run: attempt(async (ctx) => {
      const sub = subject(ctx, 'same');
      const a = await tokenSession(ctx, sub);
      // Another token of the same subject: a fresh signature, other scopes.
      const again = await tokenSession(ctx, sub, '');
      const b = await tokenSession(ctx, subject(ctx, 'other'));
      const t = need(await startTask(a, 'tap.test.sleep', { ms: 30_000 }));
      return visibility(a, again, b, t.taskId, 'token subject');
    }),
  }),
  defineCase({
    id: 'security.token.scopes',
    title: "A token's scopes bound the grant: a permission the grant lists but the token does not hold is PERMISSION_DENIED",
    level: 'MUST',
    profile: P,
    spec: 'authorization#credential-permissions',
    requirements: ['TAP-AUTH-010', 'TAP-AUTH-008'],
    needs: { ...TOKENS, capabilities: ['tap.test.guarded'] },
    run: attempt(async (ctx) => {
      const without = await tokenSession(ctx, subject(ctx, 'unscoped'), '');
      const denied = await request(without, 'tap.test.guarded', {}, { authorization: grant(['tap.test.write']) });
      const d = need(denied.reply).msg;
      if (d.type === 'task.accepted') need(await collectUntilResult(without, denied.sent.task_id!));
      require(checkError(d, { code: 'PERMISSION_DENIED' }, 'tap.test.guarded granted tap.test.write under a token with no scopes'));
      // With the run's scopes the same request runs: the token, not the request, made the difference.
      const scoped = await tokenSession(ctx, subject(ctx, 'scoped'));
      const allowed = await request(scoped, 'tap.test.guarded', {}, { authorization: grant(['tap.test.write']) });
      const a = need(allowed.reply).msg;
      if (a.type === 'task.accepted') need(await collectUntilResult(scoped, allowed.sent.task_id!));
      return verdictOf(
        'bounded by the token',
        check(
          d.payload?.details?.required_permission === 'tap.test.write',
          'the PERMISSION_DENIED does not name the permission in details.required_permission',
          'tap.test.write',
          JSON.stringify(d.payload?.details?.required_permission),
        ),
        check(
          a.type === 'task.accepted',
          `under a token with the run's scopes (${ctx.env.security!.tokens!.scope}) the request was refused too: give --jwt-scope the scopes that grant tap.test.write`,
          'task.accepted',
          describeMessage(a),
        ),
      );
    }),
  }),
];
