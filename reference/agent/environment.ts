/**
 * What an agent process takes from its environment: the pre-shared key of a conformance run
 * (TAP_HMAC_KEY_ID, TAP_HMAC_KEY, TAP_HMAC_PEER; spec: conformance#key-provisioning) and whether it
 * was started for certification (TAP_CONFORMANCE=1, which tap-conform sets for the agents it
 * starts; spec: conformance#test-capabilities).
 */
import type { PeerKey } from './options.ts';

/** The variable that asks an agent to offer the conformance capabilities tap.test.*. */
export const CONFORMANCE_VAR = 'TAP_CONFORMANCE';

/**
 * The variable that starts the agent of one conformance case with a shorter max_task_seconds, so
 * that a task outliving it is seen in seconds (spec: conformance#case-limits).
 */
export const MAX_TASK_VAR = 'TAP_MAX_TASK_SECONDS';

/** The variables of the conformance key, in the order the spec lists them. */
export const KEY_VARS = ['TAP_HMAC_KEY_ID', 'TAP_HMAC_KEY', 'TAP_HMAC_PEER'] as const;

/** An environment: process.env or a plain record of the same shape. */
export type Environment = Readonly<Record<string, string | undefined>>;

/** The process's environment, or an empty one where there is no process (a browser, a worker). */
export function processEnvironment(): Environment {
  return (globalThis as { process?: { env?: Environment } }).process?.env ?? {};
}

/** The key from the environment, none when no variable is set; throws when only some are. */
export function keysFromEnv(env: Environment = processEnvironment()): PeerKey[] {
  const [keyId, key, peer] = KEY_VARS.map((name) => env[name]);
  const given = [keyId, key, peer].filter((v) => v !== undefined && v !== '').length;
  if (given === 0) return [];
  if (given !== 3) {
    const missing = KEY_VARS.filter((name) => env[name] === undefined || env[name] === '');
    throw new Error(`set all of ${KEY_VARS.join(', ')}, or none of them (${missing.join(' and ')} missing)`);
  }
  return [{ key_id: keyId!, key: key!, peer: peer! }];
}

/** True when the environment asks for the conformance capabilities; throws on a value that is neither yes nor no. */
export function conformanceFromEnv(env: Environment = processEnvironment()): boolean {
  const raw = env[CONFORMANCE_VAR]?.trim().toLowerCase();
  if (raw === undefined || raw === '' || raw === '0' || raw === 'false' || raw === 'no') return false;
  if (raw === '1' || raw === 'true' || raw === 'yes') return true;
  throw new Error(`${CONFORMANCE_VAR}=${env[CONFORMANCE_VAR]} is neither 1 nor 0: set it to 1 to offer the conformance capabilities`);
}

/**
 * The keys an agent holds: those given in its options, then the environment's (unless the
 * options turn the environment off). A key id given both ways must name the same key.
 */
export function mergeKeys(given: readonly PeerKey[], fromEnv: readonly PeerKey[]): PeerKey[] {
  const out = [...given];
  for (const k of fromEnv) {
    const same = out.find((g) => g.key_id === k.key_id);
    if (!same) out.push(k);
    else if (same.key !== k.key || same.peer !== k.peer)
      throw new Error(`TAP_HMAC_KEY_ID names key ${k.key_id}, which options.keys gives with another key or peer`);
  }
  return out;
}

/** The max_task_seconds TAP_MAX_TASK_SECONDS asks for, undefined without it; throws on a value that is no whole number of seconds. */
export function maxTaskSecondsFromEnv(env: Environment = processEnvironment()): number | undefined {
  const raw = env[MAX_TASK_VAR]?.trim();
  if (raw === undefined || raw === '') return undefined;
  const n = Number(raw);
  if (!/^\d+$/.test(raw) || !Number.isSafeInteger(n) || n < 1)
    throw new Error(`${MAX_TASK_VAR}=${env[MAX_TASK_VAR]} is not a whole number of seconds of at least 1: unset it, or give one such as 2`);
  return n;
}
