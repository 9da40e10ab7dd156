/**
 * The pre-shared HMAC key a conformance run provisions to an agent through its environment:
 * TAP_HMAC_KEY_ID, TAP_HMAC_KEY (base64url) and TAP_HMAC_PEER (spec: conformance#key-provisioning).
 */
import type { PeerKey } from '../agent/index.ts';

/** The key from the environment, none when no variable is set; throws when only some are. */
export function keysFromEnv(env: NodeJS.ProcessEnv = process.env): PeerKey[] {
  const { TAP_HMAC_KEY_ID: keyId, TAP_HMAC_KEY: key, TAP_HMAC_PEER: peer } = env;
  const given = [keyId, key, peer].filter((v) => v !== undefined && v !== '').length;
  if (given === 0) return [];
  if (given !== 3) throw new Error('set all of TAP_HMAC_KEY_ID, TAP_HMAC_KEY and TAP_HMAC_PEER, or none of them');
  return [{ key_id: keyId!, key: key!, peer: peer! }];
}
