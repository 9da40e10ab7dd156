/**
 * Bearer tokens a run mints with the issuer's signing key it was given (--jwt-key): one per
 * session of the run, and the expired, foreign and badly signed ones the security profile's cases
 * present (spec: security#bearer-tokens). jose is loaded on first use.
 */
import { createPrivateKey, generateKeyPairSync, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';

/** What a run needs to mint tokens an agent accepts. */
export interface TokenIssuer {
  key: KeyObject;
  /** The JWS algorithm of `key`. */
  alg: string;
  /** The key id the agent's key set names, if the key file gave one. */
  kid?: string;
  issuer: string;
  audience: string;
  /** The scopes of the run's tokens (space-separated). */
  scope: string;
}

/** What one token says; anything left out is the run's. */
export interface TokenClaims {
  sub: string;
  scope?: string;
  iss?: string;
  aud?: string;
  /** Seconds since the epoch (default: an hour from now). */
  exp?: number;
  /** Sign with another key of the same type (and the same kid): a signature that does not verify. */
  forged?: boolean;
}

/** The JWS algorithm for a private key; throws a sentence for a key type JWTs do not use. */
function algorithmOf(key: KeyObject): string {
  const type = key.asymmetricKeyType;
  if (type === 'rsa') return 'RS256';
  if (type === 'ed25519') return 'EdDSA';
  if (type === 'ec') {
    const curve = key.asymmetricKeyDetails?.namedCurve;
    const alg = { prime256v1: 'ES256', secp384r1: 'ES384', secp521r1: 'ES512' }[curve ?? ''];
    if (alg) return alg;
    throw new Error(`the JWT signing key is on the curve ${curve}; use P-256, P-384 or P-521`);
  }
  throw new Error(`the JWT signing key is a ${type} key; use an RSA, EC or Ed25519 key`);
}

/** Reads the issuer's private key from a PEM (PKCS#8 or traditional) or JWK file; throws one line naming the file. */
export function readTokenIssuer(path: string, o: { issuer: string; audience: string; scope: string }): TokenIssuer {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new Error(`cannot read the JWT signing key ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  let key: KeyObject;
  let kid: string | undefined;
  try {
    if (text.includes('-----BEGIN ')) key = createPrivateKey(text);
    else {
      const jwk = JSON.parse(text) as { kid?: unknown; d?: unknown };
      if (jwk.d === undefined) throw new Error('the JWK has no private part ("d")');
      kid = typeof jwk.kid === 'string' ? jwk.kid : undefined;
      key = createPrivateKey({ key: jwk as never, format: 'jwk' });
    }
  } catch (err) {
    throw new Error(`the JWT signing key ${path} is not a private key (PEM or JWK): ${(err as Error).message}`);
  }
  return { key, alg: algorithmOf(key), ...(kid !== undefined ? { kid } : {}), issuer: o.issuer, audience: o.audience, scope: o.scope };
}

/** A fresh key of the same type as `key`, for a signature no trusted key verifies. */
function strangerOf(key: KeyObject): KeyObject {
  const type = key.asymmetricKeyType;
  if (type === 'rsa') return generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey;
  if (type === 'ec') return generateKeyPairSync('ec', { namedCurve: key.asymmetricKeyDetails!.namedCurve! }).privateKey;
  return generateKeyPairSync('ed25519').privateKey;
}

const strangers = new WeakMap<KeyObject, KeyObject>();

/** A signed JWT of `issuer` with `claims` over the run's. */
export async function mintToken(issuer: TokenIssuer, claims: TokenClaims): Promise<string> {
  const { SignJWT } = await import('jose');
  const now = Math.floor(Date.now() / 1000);
  const body: Record<string, unknown> = {
    iss: claims.iss ?? issuer.issuer,
    aud: claims.aud ?? issuer.audience,
    sub: claims.sub,
    iat: Math.min(now, claims.exp ?? now),
  };
  const scope = claims.scope ?? issuer.scope;
  if (scope !== '') body.scope = scope;
  let key = issuer.key;
  if (claims.forged) {
    if (!strangers.has(key)) strangers.set(key, strangerOf(key));
    key = strangers.get(key)!;
  }
  // As a JWK: jose's Web Crypto build does not recognise Node 20's KeyObject.
  const jwk = { ...(key.export({ format: 'jwk' }) as Record<string, unknown>), alg: issuer.alg };
  return new SignJWT(body)
    .setProtectedHeader({ alg: issuer.alg, ...(issuer.kid !== undefined ? { kid: issuer.kid } : {}) })
    .setExpirationTime(claims.exp ?? now + 3600)
    .sign(jwk);
}
