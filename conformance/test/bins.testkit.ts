/** The package's bins as the tests that start them see them: paths, and a tap-conform run to its end. */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Report } from '../report/model.ts';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const CONFORM = join(ROOT, 'bin/tap-conform.mjs');
export const AGENT = join(ROOT, 'bin/tap-reference-agent.mjs');

/** Runs the tap-conform bin to its end: its exit code, its stderr, and its JSON report when it wrote one. */
export async function tapConform(args: readonly string[]): Promise<{ code: number | null; stderr: string; report?: Report }> {
  const dir = mkdtempSync(join(tmpdir(), 'tap-conform-run-'));
  const file = join(dir, 'report.json');
  try {
    const child = spawn(process.execPath, [CONFORM, '--no-color', '--json', file, ...args], {
      cwd: ROOT,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr!.on('data', (d) => (stderr += d));
    const [code] = (await once(child, 'exit')) as [number | null];
    const report = existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as Report) : undefined;
    return { code, stderr, report };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
