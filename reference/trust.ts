/**
 * Signatures a shared server cannot forge: an Ed25519 key per principal (an agent or a requester),
 * its public half in a trust file that every reader holds, and a signature over the RFC 8785
 * canonical form of a value without its signature member. Durable task records carry their
 * submitter's signature and registry entries their agent's (spec: bindings-nats#security,
 * registry#signatures); a reader verifies before it trusts.
 */
import { createPrivateKey, createPublicKey, generateKeyPairSync, sign as edSign, verify as edVerify, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { canonicalBytes } from './core/jcs.ts';

/** A principal's signing key: its id and both halves, base64url (the private half as PKCS#8 DER). */
export interface SigningKey {
  principal: string;
  public_key: string;
  private_key: string;
}

/** What every reader holds: each principal's public key (base64url of the raw 32 bytes). */
export interface TrustFile {
  principals: Record<string, { public_key: string }>;
}

const b64u = (bytes: Uint8Array): string => Buffer.from(bytes).toString('base64url');

/** A new Ed25519 key for `principal`. */
export function newSigningKey(principal: string): SigningKey {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const raw = publicKey.export({ format: 'jwk' }).x!;
  return { principal, public_key: raw, private_key: b64u(privateKey.export({ format: 'der', type: 'pkcs8' })) };
}

function privateKeyOf(key: SigningKey): KeyObject {
  return createPrivateKey({ key: Buffer.from(key.private_key, 'base64url'), format: 'der', type: 'pkcs8' });
}

function publicKeyOf(raw: string): KeyObject {
  return createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: raw }, format: 'jwk' });
}

/** The bytes a signature covers: the canonical form of `value` without its member `member`. */
function signedBytes(value: Record<string, unknown>, member: string): Uint8Array {
  const { [member]: _omitted, ...rest } = value;
  return canonicalBytes(rest);
}

/** The signature of `value` (its member `member` left out), base64url. */
export function signValue(value: Record<string, unknown>, key: SigningKey, member = 'signature'): string {
  return b64u(edSign(null, signedBytes(value, member), privateKeyOf(key)));
}

/** True when `signature` is `principal`'s over `value` by the trust file; false for anything else, an unknown principal included. */
export function verifyValue(
  value: Record<string, unknown>,
  principal: string,
  signature: unknown,
  trust: TrustFile,
  member = 'signature',
): boolean {
  const entry = Object.hasOwn(trust.principals, principal) ? trust.principals[principal] : undefined;
  if (!entry || typeof signature !== 'string' || !/^[A-Za-z0-9_-]{86}$/.test(signature)) return false;
  try {
    return edVerify(null, signedBytes(value, member), publicKeyOf(entry.public_key), Buffer.from(signature, 'base64url'));
  } catch {
    return false;
  }
}

/** The trust file of a set of keys: their public halves only. */
export function trustOf(keys: readonly SigningKey[]): TrustFile {
  return { principals: Object.fromEntries(keys.map((k) => [k.principal, { public_key: k.public_key }])) };
}

/** Reads a trust file; throws with the file's name and what is wrong. */
export function readTrustFile(path: string): TrustFile {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new Error(`the trust file ${path} cannot be read: ${(err as Error).message}`);
  }
  const principals = (parsed as { principals?: unknown } | null)?.principals;
  if (typeof principals !== 'object' || principals === null || Array.isArray(principals))
    throw new Error(`the trust file ${path} has no "principals" object`);
  for (const [id, v] of Object.entries(principals)) {
    const key = (v as { public_key?: unknown } | null)?.public_key;
    if (typeof key !== 'string' || !/^[A-Za-z0-9_-]{43}$/.test(key))
      throw new Error(`the trust file ${path}: principal ${id} has no Ed25519 public_key`);
  }
  return { principals: principals as TrustFile['principals'] };
}

/** Reads a signing key file (as newSigningKey writes it); throws with the file's name. */
export function readSigningKey(path: string): SigningKey {
  try {
    const k = JSON.parse(readFileSync(path, 'utf8')) as SigningKey;
    if (typeof k.principal !== 'string' || typeof k.public_key !== 'string' || typeof k.private_key !== 'string')
      throw new Error('it is not a signing key');
    privateKeyOf(k);
    return k;
  } catch (err) {
    throw new Error(`the signing key ${path} cannot be used: ${(err as Error).message}`);
  }
}
