/**
 * The run's keys and credentials, read from its configuration: the HMAC key of its signed sessions
 * (spec: integrity#key-provisioning), the key that signs its durable records (spec:
 * bindings-nats#signed-records), and its client certificates and token issuer (spec: security). A
 * file or value it cannot use ends the program with exit 2.
 */
import { readSigningKey, type SigningKey } from '../reference/trust.ts';
import { readTlsFiles } from '../reference/transports/tls.ts';
import type { Security } from './context.ts';
import { fromB64u, newKey } from './mac.ts';
import { type Config, HARNESS_SIGNED_ID } from './options.ts';
import type { HmacKey } from './session-state.ts';
import type { BindingTarget } from './target.ts';
import { readTokenIssuer } from './tokens.ts';

/** Thrown to end the program with an exit code and a one-line reason. */
export class Exit extends Error {
  override name = 'Exit';
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

/** The run's HMAC key: a fresh one for a stdio agent, the one the command line gives for the others. */
export function runKey(cfg: Config, target: BindingTarget): HmacKey | undefined {
  if (target.kind === 'stdio') return { keyId: 'tap-conform-key', key: newKey(), peer: HARNESS_SIGNED_ID };
  if (!cfg.hmac) return undefined;
  const key = fromB64u(cfg.hmac.key);
  if (!key) throw new Exit(2, '--hmac-key is not base64url');
  if (key.length < 32) throw new Exit(2, `--hmac-key holds ${key.length} bytes; a pre-shared key has at least 32`);
  if (!/^[a-z0-9][a-z0-9_-]*(\.[a-z0-9_-]+)*$/.test(cfg.hmac.keyId))
    throw new Exit(2, `--hmac-key-id "${cfg.hmac.keyId}" is not a valid key id (lowercase letters, digits, "_", "-", dots)`);
  return { keyId: cfg.hmac.keyId, key, peer: cfg.hmac.peer };
}

/** The key of --signing-key, read; a usage error naming the file when it cannot be used. */
export function durableKey(cfg: Config): SigningKey | undefined {
  if (cfg.signingKey === undefined) return undefined;
  try {
    return readSigningKey(cfg.signingKey);
  } catch (err) {
    throw new Exit(2, `--signing-key: ${(err as Error).message}`);
  }
}

/**
 * The run's security material, read from its files: the TLS of a wss:// or NATS target (the first
 * client certificate on every connection) and the token issuer (spec: security). Exit 2 for a file
 * it cannot use.
 */
export function securityOf(cfg: Pick<Config, 'tls' | 'jwt'>, target: BindingTarget): { target: BindingTarget; security?: Security } {
  try {
    const security: Security = { clients: [] };
    if (cfg.tls && target.kind !== 'stdio') {
      const ca = cfg.tls.ca !== undefined ? readTlsFiles({ ca: cfg.tls.ca }).ca : undefined;
      security.clients = cfg.tls.clients.map((c) => readTlsFiles(c) as { cert: string; key: string });
      if (ca !== undefined) security.ca = String(ca);
      const first = security.clients[0];
      target = { ...target, tls: { ...(ca !== undefined ? { ca } : {}), ...(first ? { cert: first.cert, key: first.key } : {}) } };
    }
    if (cfg.jwt) security.tokens = readTokenIssuer(cfg.jwt.key, cfg.jwt);
    return security.clients.length > 0 || security.ca !== undefined || security.tokens ? { target, security } : { target };
  } catch (err) {
    throw new Exit(2, (err as Error).message);
  }
}
