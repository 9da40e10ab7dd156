import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { judgeRuns } from './certify-judge.ts';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

type Row = [id: string, verdict: string, detail?: string];
function reports(runs: Record<string, Row[]>, certified = true): string {
  const dir = mkdtempSync(join(tmpdir(), 'tap-judge-'));
  dirs.push(dir);
  for (const [name, rows] of Object.entries(runs))
    writeFileSync(
      join(dir, `${name}.json`),
      JSON.stringify({ certified, cases: rows.map(([id, verdict, detail = '']) => ({ id, verdict, detail })) }),
    );
  return dir;
}

const WS = { websocket: ['websocket', 'websocket-tls', 'websocket-tokens'] };

describe("judging the reference's certification runs", () => {
  it('passes a case UNIMPLEMENTED in one run of a binding when another run of it passes it', () => {
    const dir = reports({
      websocket: [
        ['a', 'PASS'],
        ['security.token.required', 'UNIMPLEMENTED', 'no token issuer was given'],
      ],
      'websocket-tokens': [['security.token.required', 'PASS']],
    });
    expect(judgeRuns(dir, WS)).toEqual({ passed: 2, failed: 0, lines: [] });
  });

  it('fails a case that no run passes, and one that FAILs in any run even if another passes it', () => {
    const dir = reports({
      websocket: [
        ['a', 'UNIMPLEMENTED', 'no certificate'],
        ['b', 'PASS'],
      ],
      'websocket-tls': [
        ['a', 'UNIMPLEMENTED', 'no certificate'],
        ['b', 'FAIL', 'broke'],
      ],
    });
    const judged = judgeRuns(dir, WS);
    expect(judged.passed).toBe(0);
    expect(judged.failed).toBe(2);
    expect(judged.lines).toEqual([
      'websocket (websocket): UNIMPLEMENTED a: no certificate',
      'websocket (websocket-tls): UNIMPLEMENTED a: no certificate',
      'websocket (websocket-tls): FAIL b: broke',
    ]);
  });

  it("counts another binding's SKIPPED case as passed, a run that did not certify and a missing first report as failures", () => {
    const skipped = reports({ websocket: [['stdio.framing', 'SKIPPED', 'applies to the stdio binding only']] });
    expect(judgeRuns(skipped, WS)).toMatchObject({ passed: 1, failed: 0 });
    const uncertified = reports({ websocket: [['a', 'PASS']] }, false);
    expect(judgeRuns(uncertified, WS)).toMatchObject({ passed: 1, failed: 1, lines: ['websocket: the run websocket did not certify'] });
    expect(judgeRuns(uncertified, { stdio: ['stdio'] })).toMatchObject({ failed: 1, lines: ['stdio: no report stdio.json'] });
    // A binding certified elsewhere may have a partial first run: its cases are still judged.
    expect(judgeRuns(uncertified, WS, ['websocket'])).toEqual({ passed: 1, failed: 0, lines: [] });
    const partialFailing = reports({ websocket: [['b', 'FAIL', 'broke']] }, false);
    expect(judgeRuns(partialFailing, WS, ['websocket'])).toEqual({ passed: 0, failed: 1, lines: ['websocket (websocket): FAIL b: broke'] });
    // A focused run of the security profile is partial, never a certification: only the first must certify.
    const focused = reports({ websocket: [['a', 'PASS']] });
    writeFileSync(
      join(focused, 'websocket-tokens.json'),
      JSON.stringify({ certified: false, cases: [{ id: 'b', verdict: 'PASS', detail: '' }] }),
    );
    expect(judgeRuns(focused, WS)).toEqual({ passed: 2, failed: 0, lines: [] });
  });
});
