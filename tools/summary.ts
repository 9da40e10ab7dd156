/**
 * The last line of `npm test` and `npm run test:fast`: "N passed, N failed", and the skips with
 * their reasons when there are any — never a pass by silence. .ci/run reads it.
 */

/** The summary line; `skipped` counts skipped tests by reason. */
export function summaryLine(passed: number, failed: number, skipped: Readonly<Record<string, number>> = {}): string {
  const reasons = Object.entries(skipped).filter(([, n]) => n > 0);
  const total = reasons.reduce((sum, [, n]) => sum + n, 0);
  if (total === 0) return `${passed} passed, ${failed} failed`;
  const why = reasons.map(([reason, n]) => (reasons.length > 1 ? `${n} ${reason}` : reason));
  return `${passed} passed, ${failed} failed, ${total} skipped (${why.join('; ')})`;
}
