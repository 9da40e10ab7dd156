/** Retry pacing: exponential backoff with full jitter (spec: errors#retrying). */

/** How a client retries requests refused with a retryable error. */
export interface RetryPolicy {
  /** Attempts in all, the first included (default 4; 1 disables retries). */
  attempts: number;
  /** The delay scale of the first retry, in ms (default 100). */
  baseMs: number;
  /** The longest delay between two attempts, in ms (default 5 000). */
  maxMs: number;
  /** Random numbers in [0, 1) for the jitter (default Math.random). */
  random: () => number;
}

/** The default retry policy. */
export const DEFAULT_RETRY: Readonly<RetryPolicy> = Object.freeze({
  attempts: 4,
  baseMs: 100,
  maxMs: 5000,
  random: Math.random,
});

/**
 * The delay before retry number `retry` (1 for the first retry): a uniform draw from
 * [cap / 2, cap] where cap = min(maxMs, baseMs × 2^(retry−1)), so retries spread out but
 * never come back at once.
 */
export function backoffDelay(retry: number, policy: Pick<RetryPolicy, 'baseMs' | 'maxMs' | 'random'>): number {
  const cap = Math.min(policy.maxMs, policy.baseMs * 2 ** Math.max(0, retry - 1));
  return Math.round(cap / 2 + policy.random() * (cap / 2));
}

/** Fills in the defaults of a partial policy. */
export function retryPolicy(partial: Partial<RetryPolicy> | undefined): RetryPolicy {
  return { ...DEFAULT_RETRY, ...partial };
}
