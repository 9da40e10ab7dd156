import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { summaryLine } from './summary.ts';

/** .ci/run's own lines: the grep that finds the summary, and the case that fails CI on a missing tool. */
const CI = readFileSync(new URL('../.ci/run', import.meta.url), 'utf8');
const CI_GREP = /grep -E '([^']+)' "\$log"/.exec(CI)![1]!;
const CI_CASE = /^case "\$summary" in .*esac$/m.exec(CI)![0]!;

describe('the summary line of npm test', () => {
  it('says N passed, N failed, and nothing more when nothing was skipped', () => {
    expect(summaryLine(12, 0)).toBe('12 passed, 0 failed');
    expect(summaryLine(12, 1, { 'nats-server missing: apt-get install nats-server': 0 })).toBe('12 passed, 1 failed');
  });

  it('counts and names the skips, one reason or several', () => {
    expect(summaryLine(10, 0, { 'nats-server missing: apt-get install nats-server': 3 })).toBe(
      '10 passed, 0 failed, 3 skipped (nats-server missing: apt-get install nats-server)',
    );
    expect(summaryLine(10, 0, { 'chromium missing: apt-get install chromium': 2, 'go missing: apt-get install golang-go': 1 })).toBe(
      '10 passed, 0 failed, 3 skipped (2 chromium missing: apt-get install chromium; 1 go missing: apt-get install golang-go)',
    );
  });

  it('is what .ci/run reads, and a skip for a missing tool fails CI', () => {
    const sh = (script: string, line: string) => execFileSync('bash', ['-c', script, 'ci', line], { encoding: 'utf8' }).trim();
    // .ci/run's grep finds the line; its case exits 1 on a skip for a missing tool.
    const found = (line: string) => sh(`printf '%s\\n' "$1" | grep -cE '${CI_GREP}' || true`, line);
    const verdict = (line: string) => sh(`summary="$1"; (${CI_CASE}) >/dev/null 2>&1 && echo pass || echo fail`, line);
    const skippedLine = summaryLine(1, 0, { 'nats-server missing: apt-get install nats-server': 1 });
    expect(found(skippedLine)).toBe('1');
    expect(found(summaryLine(1, 0))).toBe('1');
    expect(found(`${summaryLine(1, 0)} and more`)).toBe('0');
    expect(verdict(skippedLine)).toBe('fail');
    expect(verdict(summaryLine(1, 0, { 'skipped by the test itself; see the vitest output': 1 }))).toBe('pass');
  });
});
