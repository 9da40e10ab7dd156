/**
 * Bearer tokens in the JWT form (RFC 7519), verified with jose: the signature against the
 * issuer's public keys, `iss`, `aud`, `exp` and `nbf` within a small clock tolerance; the token's
 * issuer and subject become the session's principal and its scopes the permissions every grant
 * of the session is bounded by (spec: security#bearer-tokens, authorization#credential-permissions).
 */
import { createPublicKey } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { JSONWebKeySet, JWK, JWTPayload } from 'jose';
import type { Authenticator, AuthenticatorAnswer } from './options.ts';

/** Options of `jwtAuthenticator`. */
export interface JwtAuthenticatorOptions {
  /** The issuers whose tokens are accepted: a token's `iss` must be one of them. */
  issuer: string | string[];
  /** This agent's audience: a token's `aud` must name it (or one of them). */
  audience: string | string[];
  /** The issuers' public keys: a JWK Set `{ "keys": […] }`, one public JWK, or a PEM public key or certificate. */
  keys: JSONWebKeySet | JWK | string;
  /** The signature algorithms accepted (default: every one the keys' types allow). */
  algorithms?: string[];
  /** Seconds of clock skew allowed for `exp` and `nbf` (default 30, at most 300). */
  clockToleranceSec?: number;
  /** The principal a verified token proves (default "jwt:<iss>#<sub>"); undefined refuses the token. */
  principal?: (claims: JWTPayload) => string | undefined;
  /**
   * The TAP permissions each scope grants (default: a scope grants the permission of the same
   * name). A scope not in the map grants nothing.
   */
  scopes?: Record<string, readonly string[]>;
  /** The clock in ms since the epoch (default Date.now). */
  now?: () => number;
}

/** The default clock tolerance, in seconds. */
export const DEFAULT_CLOCK_TOLERANCE_SEC = 30;
const MAX_CLOCK_TOLERANCE_SEC = 300;

/** The scopes of a token: `scope` (space-separated, RFC 8693) and `scp` (a list or a string). */
export function scopesOf(claims: JWTPayload): string[] {
  const out: string[] = [];
  for (const claim of [claims.scope, claims.scp]) {
    if (typeof claim === 'string') out.push(...claim.split(' ').filter((s) => s !== ''));
    else if (Array.isArray(claim)) out.push(...claim.filter((s): s is string => typeof s === 'string' && s !== ''));
  }
  return [...new Set(out)];
}

/** The JWK Set the keys option stands for; throws one line when it is not a set of public keys. */
function keySet(keys: JwtAuthenticatorOptions['keys']): JSONWebKeySet {
  if (typeof keys === 'string') {
    if (/PRIVATE KEY-----/.test(keys)) throw new TypeError("the JWT keys are a private key: give the issuer's public key");
    try {
      return { keys: [createPublicKey(keys).export({ format: 'jwk' }) as JWK] };
    } catch (err) {
      throw new TypeError(`the JWT key is not a PEM public key or certificate: ${(err as Error).message}`);
    }
  }
  const set = 'keys' in keys && Array.isArray(keys.keys) ? (keys as JSONWebKeySet) : { keys: [keys as JWK] };
  if (set.keys.length === 0) throw new TypeError('the JWT key set holds no key');
  for (const k of set.keys) {
    if (typeof k?.kty !== 'string') throw new TypeError('a JWT key has no "kty": give a JWK Set { "keys": [ … ] } of public keys');
    if ('d' in k || k.kty === 'oct')
      throw new TypeError("the JWT key set holds a private or secret key: give the issuer's public keys only");
  }
  return set;
}

/**
 * Reads the issuer's public keys from a file: a JWK Set or one JWK (JSON), or a PEM public key
 * or certificate. Throws one line naming the file.
 */
export function readJwtKeys(path: string): JSONWebKeySet | JWK | string {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new TypeError(`cannot read the JWT keys file ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  if (text.includes('-----BEGIN ')) return text;
  try {
    return JSON.parse(text) as JSONWebKeySet | JWK;
  } catch {
    throw new TypeError(`the JWT keys file ${path} is neither JSON (a JWK Set) nor PEM`);
  }
}

const short = (v: unknown): string => JSON.stringify(String(v).slice(0, 80));

/** Why jose refused a token, in a sentence that names no part of the token but its claims (spec: security#secrets). */
function refusal(err: unknown): string {
  const e = err as { code?: string; claim?: string; reason?: string; payload?: JWTPayload; message?: string };
  switch (e.code) {
    case 'ERR_JWT_EXPIRED':
      return typeof e.payload?.exp === 'number'
        ? `the token expired at ${new Date(e.payload.exp * 1000).toISOString()}`
        : 'the token expired';
    case 'ERR_JWT_CLAIM_VALIDATION_FAILED':
      if (e.reason === 'missing') return `the token has no "${e.claim}" claim`;
      if (e.claim === 'iss') return `the token's issuer ${short(e.payload?.iss)} is not one this agent trusts`;
      if (e.claim === 'aud') return 'the token is not meant for this agent (its audience does not name it)';
      if (e.claim === 'nbf') return 'the token is not valid yet';
      return `the token's "${e.claim}" claim is not acceptable`;
    case 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED':
      return "the token's signature does not verify against the issuer's keys";
    case 'ERR_JWKS_NO_MATCHING_KEY':
      return 'no key of a trusted issuer matches the token';
    case 'ERR_JOSE_ALG_NOT_ALLOWED':
    case 'ERR_JOSE_NOT_SUPPORTED':
      return "the token's signature algorithm is not accepted";
    default:
      return 'the token is not a well-formed signed JWT';
  }
}

/**
 * An authenticator for `createAgent({ authenticate })` that takes `{ scheme: "bearer", token }`
 * with `token` a JWT: a token that verifies proves the principal "jwt:<iss>#<sub>", holds the
 * permissions its scopes map to, and bounds the session until its `exp`; any other is refused
 * with AUTH_REQUIRED and a reason. Loads jose on first use.
 */
export async function jwtAuthenticator(options: JwtAuthenticatorOptions): Promise<Authenticator> {
  const issuers = [options.issuer].flat();
  const audiences = [options.audience].flat();
  if (issuers.length === 0 || issuers.some((i) => typeof i !== 'string' || i === ''))
    throw new TypeError('give the JWT issuer(s) to trust');
  if (audiences.length === 0 || audiences.some((a) => typeof a !== 'string' || a === ''))
    throw new TypeError("give this agent's JWT audience");
  const tolerance = options.clockToleranceSec ?? DEFAULT_CLOCK_TOLERANCE_SEC;
  if (!(tolerance >= 0 && tolerance <= MAX_CLOCK_TOLERANCE_SEC))
    throw new TypeError(`the clock tolerance is ${tolerance} s; give 0 to ${MAX_CLOCK_TOLERANCE_SEC}`);
  const { createLocalJWKSet, jwtVerify } = await import('jose');
  const keys = createLocalJWKSet(keySet(options.keys));
  const now = options.now ?? Date.now;
  const principalOf = options.principal ?? ((c: JWTPayload) => `jwt:${c.iss}#${c.sub}`);
  const permissionsOf = (scopes: string[]): string[] =>
    options.scopes ? [...new Set(scopes.flatMap((s) => options.scopes![s] ?? []))] : scopes;
  return async (credentials): Promise<AuthenticatorAnswer> => {
    if (credentials.scheme.toLowerCase() !== 'bearer')
      return { refused: `the ${short(credentials.scheme)} scheme is not accepted; send { "scheme": "bearer", "token": <a JWT> }` };
    if (credentials.token === undefined || credentials.token === '') return { refused: 'the bearer credentials hold no token' };
    let claims: JWTPayload;
    try {
      ({ payload: claims } = await jwtVerify(credentials.token, keys, {
        issuer: issuers,
        audience: audiences,
        clockTolerance: tolerance,
        currentDate: new Date(now()),
        requiredClaims: ['exp', 'sub'],
        ...(options.algorithms ? { algorithms: options.algorithms } : {}),
      }));
    } catch (err) {
      return { refused: refusal(err) };
    }
    const principal = principalOf(claims);
    if (principal === undefined || principal === '') return { refused: 'the token names no principal this agent knows' };
    return { principal, permissions: permissionsOf(scopesOf(claims)), expiresAt: (claims.exp! + tolerance) * 1000 };
  };
}
