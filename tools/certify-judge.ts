/**
 * How `npm test` judges the reference's certification runs (tools/certify-reference.ts): the
 * reference is held to every case, not just to certification. A binding may take several runs
 * (over WebSocket the security profile runs once per kind of credential, since each decides the
 * session's principal alone); across them a case must PASS in one, or be SKIPPED as another
 * binding's in all, and FAIL or ERROR in none, and the first run, the whole suite, must certify —
 * unless the caller certifies the whole suite over that binding elsewhere (`partial`): npm test
 * certifies the README's agent over stdio and narrows the reference's plain stdio run to the cases
 * only the reference can be held to there (tools/test-all.ts).
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { notPerfect, type Report } from '../conformance/report/model.ts';

/**
 * The runs of `npm run certify`, by binding, named as their reports are: the first of each is the
 * whole suite, the others the security and authorization profiles with one kind of credential.
 */
export const RUNS = {
  stdio: ['stdio', 'stdio-tokens'],
  websocket: ['websocket', 'websocket-tls', 'websocket-tokens', 'websocket-case-limits'],
} as const;

type Judged = Pick<Report, 'certified' | 'cases'>;

/**
 * Counts the cases of the reports in `dir`, grouped by binding (`{ binding: [report names] }`); a
 * report absent from the folder is left out, but each binding needs its first. The first run of a
 * binding named in `partial` may be a partial run: its cases are judged, but it need not certify.
 */
export function judgeRuns(
  dir: string,
  bindings: Record<string, readonly string[]>,
  partial: readonly string[] = [],
): { passed: number; failed: number; lines: string[] } {
  let passed = 0;
  let failed = 0;
  const lines: string[] = [];
  for (const [binding, names] of Object.entries(bindings)) {
    const reports: { name: string; report: Judged }[] = [];
    for (const [i, name] of names.entries()) {
      const file = join(dir, `${name}.json`);
      if (!existsSync(file)) {
        if (i === 0) {
          failed++;
          lines.push(`${binding}: no report ${name}.json`);
        }
        continue;
      }
      try {
        reports.push({ name, report: JSON.parse(readFileSync(file, 'utf8')) as Judged });
      } catch (err) {
        failed++;
        lines.push(`${binding}: ${name}.json is not a report: ${(err as Error).message}`);
      }
    }
    for (const { name, report } of reports.slice(0, 1)) {
      if (!report.certified && !partial.includes(binding)) {
        failed++;
        lines.push(`${binding}: the run ${name} did not certify`);
      }
    }
    const ids = [...new Set(reports.flatMap(({ report }) => report.cases.map((c) => c.id)))];
    for (const id of ids) {
      const runs = reports.flatMap(({ name, report }) => report.cases.filter((c) => c.id === id).map((c) => ({ name, c })));
      const broken = runs.filter(({ c }) => c.verdict === 'FAIL' || c.verdict === 'ERROR');
      const perfectOnce = runs.some(({ c }) => notPerfect([c]).length === 0);
      if (broken.length === 0 && perfectOnce) passed++;
      else {
        failed++;
        const shown = broken.length > 0 ? broken : runs;
        lines.push(...shown.map(({ name, c }) => `${binding} (${name}): ${c.verdict} ${id}: ${c.detail}`));
      }
    }
  }
  return { passed, failed, lines };
}
