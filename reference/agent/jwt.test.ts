import { generateKeyPairSync } from 'node:crypto';
import { exportJWK, generateKeyPair, type JWK, SignJWT, UnsecuredJWT } from 'jose';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { systemClock, type Clock } from './options.ts';
import { jwtAuthenticator, scopesOf, type JwtAuthenticatorOptions } from './jwt.ts';
import { expectCleanHistories, testAgent, TestPeer } from './peer.testkit.ts';

afterEach(expectCleanHistories);

const ISSUER = 'https://issuer.tap.test';
const AUDIENCE = 'tap.agent-under-test';
type Key = Awaited<ReturnType<typeof generateKeyPair>>['privateKey'];
let signing: Key;
let publicJwk: JWK;
let stranger: Key;

beforeAll(async () => {
  const pair = await generateKeyPair('ES256');
  signing = pair.privateKey;
  publicJwk = { ...(await exportJWK(pair.publicKey)), kid: 'issuer-1', alg: 'ES256' };
  stranger = (await generateKeyPair('ES256')).privateKey;
});

const nowSec = (): number => Math.floor(Date.now() / 1000);

/** A token of the test issuer for the test audience, valid for an hour, unless `claims` or `o` say otherwise. */
function token(claims: Record<string, unknown> = {}, o: { key?: Key; kid?: string; exp?: number | null } = {}): Promise<string> {
  const jwt = new SignJWT({ iss: ISSUER, aud: AUDIENCE, sub: 'alice', iat: nowSec(), ...claims }).setProtectedHeader({
    alg: 'ES256',
    kid: o.kid ?? 'issuer-1',
  });
  if (o.exp !== null) jwt.setExpirationTime(o.exp ?? nowSec() + 3600);
  return jwt.sign(o.key ?? signing);
}

const authenticator = (o: Partial<JwtAuthenticatorOptions> = {}) =>
  jwtAuthenticator({ issuer: ISSUER, audience: AUDIENCE, keys: { keys: [publicJwk] }, ...o });

const bearer = (t: string) => ({ scheme: 'bearer', token: t });
const card = {} as never;

describe('jwtAuthenticator (spec: security#bearer-tokens)', () => {
  it('accepts a token that verifies: principal jwt:<iss>#<sub>, its scopes, and its expiry plus the tolerance', async () => {
    const check = await authenticator();
    const exp = nowSec() + 600;
    const answer = await check(bearer(await token({ scope: 'tap.test.write files.read' }, { exp })), card);
    expect(answer).toEqual({
      principal: `jwt:${ISSUER}#alice`,
      permissions: ['tap.test.write', 'files.read'],
      expiresAt: (exp + 30) * 1000,
    });
  });

  it('refuses, saying why, a token expired beyond the tolerance, not yet valid, of another issuer or audience, or missing sub or exp', async () => {
    const check = await authenticator();
    const refused = async (t: Promise<string>) => ((await check(bearer(await t), card)) as { refused: string }).refused;
    expect(await refused(token({}, { exp: nowSec() - 120 }))).toMatch(/^the token expired at \d{4}-/);
    expect(await refused(token({ nbf: nowSec() + 600 }))).toBe('the token is not valid yet');
    expect(await refused(token({ iss: 'https://elsewhere.test' }))).toBe(
      `the token's issuer "https://elsewhere.test" is not one this agent trusts`,
    );
    expect(await refused(token({ aud: 'another.agent' }))).toMatch(/not meant for this agent/);
    expect(await refused(token({ sub: undefined }))).toBe('the token has no "sub" claim');
    expect(await refused(token({}, { exp: null }))).toBe('the token has no "exp" claim');
    // Within the tolerance a token that just expired still counts.
    expect(await check(bearer(await token({}, { exp: nowSec() - 5 })), card)).toMatchObject({ principal: `jwt:${ISSUER}#alice` });
    expect(await (await authenticator({ clockToleranceSec: 0 }))(bearer(await token({}, { exp: nowSec() - 5 })), card)).toMatchObject({
      refused: expect.stringMatching(/expired/),
    });
  });

  it('refuses a signature by another key, an unsigned token, a token that is no JWT, and other schemes', async () => {
    const check = await authenticator();
    const refusedFor = async (credentials: { scheme: string; token?: string }) =>
      ((await check(credentials, card)) as { refused: string }).refused;
    expect(await refusedFor(bearer(await token({}, { key: stranger })))).toBe(
      "the token's signature does not verify against the issuer's keys",
    );
    expect(await refusedFor(bearer(await token({}, { key: stranger, kid: 'unknown' })))).toBe(
      'no key of a trusted issuer matches the token',
    );
    const unsigned = new UnsecuredJWT({ iss: ISSUER, aud: AUDIENCE, sub: 'alice' }).setExpirationTime('1h').encode();
    expect(await refusedFor(bearer(unsigned))).toMatch(/well-formed signed JWT|algorithm/);
    expect(await refusedFor(bearer('not.a.jwt'))).toBe('the token is not a well-formed signed JWT');
    expect(await refusedFor({ scheme: 'basic', token: 'YWxpY2U6c2VjcmV0' })).toMatch(/"basic" scheme is not accepted/);
    expect(await refusedFor({ scheme: 'bearer' })).toBe('the bearer credentials hold no token');
  });

  it('names no part of the token in a refusal (spec: security#secrets)', async () => {
    const check = await authenticator();
    const t = await token({}, { key: stranger });
    const answer = JSON.stringify(await check(bearer(t), card));
    for (const part of t.split('.')) expect(answer).not.toContain(part);
  });

  it('maps scopes to permissions: scope and scp, and through a map when one is given', async () => {
    expect(scopesOf({ scope: 'a b  a', scp: ['c', 'b'] })).toEqual(['a', 'b', 'c']);
    const mapped = await authenticator({ scopes: { 'repo:write': ['tap.test.write', 'repo.write'], 'repo:read': ['repo.read'] } });
    expect(await mapped(bearer(await token({ scp: ['repo:write', 'unmapped'] })), card)).toMatchObject({
      permissions: ['tap.test.write', 'repo.write'],
    });
    expect(await mapped(bearer(await token()), card)).toMatchObject({ permissions: [] });
  });

  it('takes a PEM public key, and refuses private or secret keys and bad settings', async () => {
    const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const pem = rsa.publicKey.export({ type: 'spki', format: 'pem' }).toString();
    const check = await authenticator({ keys: pem });
    const t = await new SignJWT({ iss: ISSUER, aud: AUDIENCE, sub: 'bob' })
      .setProtectedHeader({ alg: 'RS256' })
      .setExpirationTime('1h')
      .sign(rsa.privateKey);
    expect(await check(bearer(t), card)).toMatchObject({ principal: `jwt:${ISSUER}#bob` });
    const privatePem = rsa.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    await expect(authenticator({ keys: privatePem })).rejects.toThrow(/private key/);
    await expect(authenticator({ keys: { keys: [{ kty: 'oct', k: 'c2VjcmV0' }] } })).rejects.toThrow(/private or secret/);
    await expect(authenticator({ keys: { keys: [] } })).rejects.toThrow(/no key/);
    await expect(authenticator({ issuer: [] })).rejects.toThrow(/issuer/);
    await expect(authenticator({ clockToleranceSec: 3600 })).rejects.toThrow(/tolerance/);
  });
});

describe('an agent that verifies bearer tokens (spec: handshake#credentials, authorization#credential-permissions)', () => {
  /** An agent requiring tokens, whose clock (and its authenticator's) can be moved forward. */
  async function tokenAgent() {
    let offset = 0;
    const clock: Clock = { ...systemClock, now: () => Date.now() + offset };
    const agent = testAgent({ clock, requireCredentials: true, authenticate: await authenticator({ now: clock.now }) });
    return { agent, forward: (ms: number) => (offset += ms), now: clock.now };
  }
  const grant = (permissions: string[], now = Date.now()) => ({
    permissions,
    resources: [],
    expires_at: new Date(now + 3_600_000).toISOString(),
  });

  it('refuses a handshake without a token, or with a refused one, with AUTH_REQUIRED saying why, and creates no session', async () => {
    const { agent } = await tokenAgent();
    const none = new TestPeer(agent);
    const a = none.init();
    expect((await none.reply(a.message_id)).payload).toMatchObject({ code: 'AUTH_REQUIRED', fatal: true });
    const expired = new TestPeer(agent);
    const b = expired.init({ credentials: bearer(await token({}, { exp: nowSec() - 3600 })) });
    expect((await expired.reply(b.message_id)).payload).toMatchObject({
      code: 'AUTH_REQUIRED',
      message: expect.stringMatching(/^the bearer credentials were refused: the token expired at/),
    });
    await expired.until(() => expired.closed);
    expect(agent.stats().sessions).toBe(0);
    await agent.shutdown();
  });

  it('makes the token the principal: sessions of one subject share tasks, another subject sees none', async () => {
    const { agent } = await tokenAgent();
    const a = new TestPeer(agent);
    await a.handshake({ credentials: bearer(await token()) });
    a.request('t1', 'tap.test.echo', 1);
    await a.result('t1');
    const again = new TestPeer(agent);
    await again.handshake({ credentials: bearer(await token({ scope: 'other' })) });
    const seen = again.send({ type: 'task.status', task_id: 't1' });
    expect((await again.reply(seen.message_id)).type).toBe('task.snapshot');
    const bob = new TestPeer(agent);
    await bob.handshake({ credentials: bearer(await token({ sub: 'bob' })) });
    const unseen = bob.send({ type: 'task.status', task_id: 't1' });
    expect((await bob.reply(unseen.message_id)).payload.code).toBe('UNKNOWN_TASK');
    await agent.shutdown();
  });

  it('holds frames sent behind the init until the token is checked, and answers them in order', async () => {
    const { agent } = await tokenAgent();
    const peer = new TestPeer(agent);
    const init = peer.init({ credentials: bearer(await token()) });
    const ping = peer.send({ type: 'ping' });
    await peer.reply(ping.message_id);
    const order = peer.received.map((m) => m.reply_to);
    expect(order.indexOf(init.message_id)).toBeLessThan(order.indexOf(ping.message_id));
    await agent.shutdown();
  });

  it('bounds a grant by the token: a permission the scopes lack is refused PERMISSION_DENIED, one they hold runs', async () => {
    const { agent } = await tokenAgent();
    const narrow = new TestPeer(agent);
    await narrow.handshake({ credentials: bearer(await token({ scope: 'tap.test.read' })) });
    const denied = narrow.request('g1', 'tap.test.guarded', {}, { authorization: grant(['tap.test.write']) });
    expect((await narrow.reply(denied.message_id)).payload).toMatchObject({
      code: 'PERMISSION_DENIED',
      retryable: false,
      details: { required_permission: 'tap.test.write' },
      message: expect.stringMatching(/credentials of this session do not hold tap\.test\.write/),
    });
    const wide = new TestPeer(agent);
    await wide.handshake({ credentials: bearer(await token({ sub: 'carol', scope: 'tap.test.write' })) });
    wide.request('g2', 'tap.test.guarded', {}, { authorization: grant(['tap.test.write']) });
    expect((await wide.result('g2')).payload).toEqual({ status: 'completed', output: { ok: true } });
    await agent.shutdown();
  });

  it('refuses task requests once the token expired, with AUTHORIZATION_EXPIRED, and a fresh token on resume lifts it', async () => {
    const { agent, forward, now } = await tokenAgent();
    const peer = new TestPeer(agent, { now });
    await peer.handshake({ credentials: bearer(await token({}, { exp: nowSec() + 60 })) });
    peer.request('e1', 'tap.test.echo', 1);
    expect((await peer.result('e1')).payload.status).toBe('completed');
    forward(120_000);
    const late = peer.request('e2', 'tap.test.echo', 2);
    expect((await peer.reply(late.message_id)).payload).toMatchObject({
      code: 'AUTHORIZATION_EXPIRED',
      message: expect.stringMatching(/credentials of this session expired at/),
    });
    await peer.close();
    const back = new TestPeer(agent, { now });
    const fresh = await token({ iat: Math.floor(now() / 1000) }, { exp: Math.floor(now() / 1000) + 600 });
    await back.handshake({
      credentials: bearer(fresh),
      resume: { session_id: peer.sessionId, resume_token: peer.resumeToken, tasks: [] },
    });
    back.sessionId = peer.sessionId;
    back.request('e3', 'tap.test.echo', 3);
    expect((await back.result('e3')).payload.status).toBe('completed');
    await agent.shutdown();
  });

  it('refuses the credentials when the authenticator fails, and logs why without them', async () => {
    const lines: string[] = [];
    const agent = testAgent({
      requireCredentials: true,
      authenticate: async () => {
        throw new Error('the key server is down');
      },
      logger: (_level, message) => lines.push(message),
    });
    const peer = new TestPeer(agent);
    const init = peer.init({ credentials: bearer('secret-token-value') });
    expect((await peer.reply(init.message_id)).payload).toMatchObject({
      code: 'AUTH_REQUIRED',
      message: 'the bearer credentials were refused: the credentials could not be checked',
    });
    expect(lines.join('\n')).toContain('the key server is down');
    expect(lines.join('\n')).not.toContain('secret-token-value');
    await agent.shutdown();
  });
});
