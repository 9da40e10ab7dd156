/**
 * security profile, Client certificates (spec: security#client-certificates): an agent that
 * requires them refuses a connection without one, or with one no authority it trusts signed,
 * before any session; a certificate's identity is the principal.
 */
import { X509Certificate } from 'node:crypto';
import { type Case, defineCase } from '../../case.ts';
import type { CaseContext } from '../../context.ts';
import { describeMessage, initPayload } from '../../steps.ts';
import { pass, type Outcome } from '../../verdict.ts';
import { selfSignedClientCertificate, type CertificateNames } from '../../x509.ts';
import { check, need, verdictOf } from '../kit.ts';
import { principalCase } from './kit.ts';
import { alternativeNames } from '../../../reference/transports/tls.ts';

const CERTIFICATE = { security: 'client-certificate' as const, binding: 'websocket' as const };

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

/** The run's authority, if it gave one, for a connection that presents other material. */
const authority = (ctx: CaseContext): { ca?: string } => {
  const ca = ctx.env.security!.ca;
  return ca !== undefined ? { ca } : {};
};

export const cases: Case[] = [
  defineCase({
    id: 'security.tls.no-certificate',
    title: 'An agent that requires client certificates refuses a connection without one, before any session',
    profile: 'security',
    requirements: ['TAP-SEC-007'],
    needs: CERTIFICATE,
    run: (ctx) => refusedBeforeSession(ctx, authority(ctx), 'without a client certificate'),
  }),
  defineCase({
    id: 'security.tls.untrusted-certificate',
    title: "An agent that requires client certificates refuses one no authority it trusts signed, even one naming the run's identity",
    profile: 'security',
    requirements: ['TAP-SEC-007'],
    needs: CERTIFICATE,
    run: async (ctx) => {
      const names = namesOf(ctx.env.security!.clients[0]!.cert);
      const forged = selfSignedClientCertificate(names);
      ctx.note(`a self-signed certificate naming ${JSON.stringify(names)}`);
      return refusedBeforeSession(ctx, { ...authority(ctx), ...forged }, 'with a self-signed client certificate');
    },
  }),
  principalCase(
    {
      id: 'security.tls.principal',
      title: "A client certificate's identity is the principal: the same certificate shares tasks, another sees none",
      requirements: ['TAP-SEC-008', 'TAP-AUTH-003'],
    },
    { ...CERTIFICATE, security: 'two-client-certificates' },
    'client certificate',
    async (ctx) => ({
      owner: need(await ctx.session()),
      same: need(await ctx.session()),
      other: need(await ctx.session({ principal: 'another' })),
    }),
  ),
];
