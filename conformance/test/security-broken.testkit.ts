/**
 * Agents that break one rule of the security profile on purpose, for its self-test: the reference
 * runtime behind a wss:// server that judges client certificates wrongly, or behind an
 * authenticator that checks tokens wrongly (spec: security#client-certificates, security#bearer-tokens).
 */
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { decodeJwt, type JWTPayload } from 'jose';
import { WebSocketServer } from 'ws';
import { createAgent, jwtAuthenticator, withConformanceCapabilities, type Agent, type Authenticator } from '../../reference/agent/index.ts';
import { certificatePrincipal } from '../../reference/transports/tls.ts';
import { TAP_SUBPROTOCOL, WebSocketTransport } from '../../reference/transports/websocket.ts';

/** How a broken agent judges client certificates. */
export type CertificateFault =
  /** Serves wss:// without asking for a client certificate (TAP-SEC-007). */
  | 'no-certificate-asked'
  /** Asks for a certificate and takes its name as the principal without verifying who signed it (TAP-SEC-007). */
  | 'unverified-certificate'
  /** Verifies certificates but makes each connection a principal of its own (TAP-SEC-008). */
  | 'principal-per-connection';

/** How a broken agent judges bearer tokens. */
export type TokenFault =
  /** Accepts a session without a token (TAP-HS-020). */
  | 'token-optional'
  /** Judges `exp` by a clock stopped at the epoch (TAP-SEC-009). */
  | 'expiry-unchecked'
  /** Trusts any issuer and audience (TAP-SEC-009). */
  | 'foreign-accepted'
  /** Reads the claims without verifying the signature (TAP-SEC-009). */
  | 'signature-unchecked'
  /** Takes the issuer alone as the principal, so every subject shares it (TAP-SEC-010). */
  | 'subject-ignored'
  /** Verifies the token but ignores its scopes (TAP-AUTH-010). */
  | 'scopes-ignored';

const card = (fault: string) => ({
  agent_id: 'tap.broken-security',
  name: `broken (${fault})`,
  description: `The reference runtime with one security fault: ${fault}.`,
  capabilities: [],
  limits: { max_concurrent_tasks: 16, max_task_seconds: 60, max_message_bytes: 1048576 },
});

const runtime = (fault: string, extra: Partial<Parameters<typeof createAgent>[0]> = {}): Agent =>
  createAgent({ card: card(fault), capabilities: withConformanceCapabilities(), logger: () => {}, env: false, signals: false, ...extra });

/** A wss:// agent with a certificate fault; resolves with its URL and its stop function. */
export async function startCertificateBroken(
  fault: CertificateFault,
  tls: { cert: string; key: string; ca: string },
): Promise<{ url: string; stop: () => Promise<void> }> {
  const agent = runtime(fault);
  if (fault === 'no-certificate-asked') {
    const listener = await agent.listen({ tls: { cert: tls.cert, key: tls.key } });
    return { url: listener.url, stop: () => agent.shutdown() };
  }
  const server = createServer({ cert: tls.cert, key: tls.key, ca: tls.ca, requestCert: true, rejectUnauthorized: false });
  const wss = new WebSocketServer({
    server,
    maxPayload: 2 * 1048576,
    handleProtocols: (p) => (p.has(TAP_SUBPROTOCOL) ? TAP_SUBPROTOCOL : false),
  });
  wss.on('connection', (ws, request) => {
    ws.on('error', () => {});
    const socket = request.socket as TLSSocket;
    const cert = socket.getPeerCertificate();
    if (fault === 'principal-per-connection' && !socket.authorized) return ws.close(1008, 'refused');
    const principal = fault === 'unverified-certificate' ? certificatePrincipal(cert) : undefined;
    if (fault === 'unverified-certificate' && principal === undefined) return ws.close(1008, 'no certificate');
    agent.attach(new WebSocketTransport(ws, 2 * 1048576), principal !== undefined ? { principal } : {});
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `wss://127.0.0.1:${port}/`,
    stop: async () => {
      await agent.shutdown();
      wss.close();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** A ws:// agent with a token fault, trusting `issuer` for `audience` with `keys`; resolves with its URL and stop function. */
export async function startTokenBroken(
  fault: TokenFault,
  o: { issuer: string; audience: string; keys: { keys: object[] } },
): Promise<{ url: string; stop: () => Promise<void> }> {
  const honest = await jwtAuthenticator({ issuer: o.issuer, audience: o.audience, keys: o.keys as never });
  let authenticate: Authenticator = honest;
  if (fault === 'expiry-unchecked')
    authenticate = await jwtAuthenticator({ issuer: o.issuer, audience: o.audience, keys: o.keys as never, now: () => 0 });
  if (fault === 'foreign-accepted')
    authenticate = await jwtAuthenticator({
      issuer: [o.issuer, `${o.issuer}.elsewhere`],
      audience: [o.audience, `${o.audience}.elsewhere`],
      keys: o.keys as never,
    });
  if (fault === 'signature-unchecked')
    authenticate = (credentials) => {
      const claims: JWTPayload = decodeJwt(credentials.token ?? '');
      const scope = typeof claims.scope === 'string' ? claims.scope.split(' ') : [];
      return { principal: `jwt:${claims.iss}#${claims.sub}`, permissions: scope };
    };
  if (fault === 'subject-ignored')
    authenticate = await jwtAuthenticator({
      issuer: o.issuer,
      audience: o.audience,
      keys: o.keys as never,
      principal: (c) => `jwt:${c.iss}`,
    });
  if (fault === 'scopes-ignored')
    authenticate = async (credentials, peer) => {
      const answer = await honest(credentials, peer);
      return answer !== null && typeof answer === 'object' && 'principal' in answer ? answer.principal : answer;
    };
  const agent = runtime(fault, { authenticate, requireCredentials: fault !== 'token-optional' });
  const listener = await agent.listen({});
  return { url: listener.url, stop: () => agent.shutdown() };
}
