/**
 * tap-conform interrupted in the middle of a run leaves nothing of its cases behind: their agent
 * processes are killed and their state folders removed (spec: conformance#processes).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const CONFORM = join(ROOT, 'bin/tap-conform.mjs');
const AGENT = join(ROOT, 'bin/tap-reference-agent.mjs');

const tmp = mkdtempSync(join(tmpdir(), 'tap-interrupted-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const stateFolders = (): string[] => readdirSync(tmp).filter((f) => f.startsWith('tap-conform-state-'));

describe('tap-conform interrupted (spec: conformance#processes)', () => {
  it.skipIf(process.platform === 'win32')(
    'removes the state folders of the cases that were running',
    async () => {
      // The run's temporary folder is this test's own, so that every state folder in it is the run's.
      const child = spawn(process.execPath, [CONFORM, '--', process.execPath, AGENT], {
        cwd: ROOT,
        env: { ...process.env, TMPDIR: tmp },
        stdio: ['ignore', 'ignore', 'ignore'],
      });
      const exited = new Promise<NodeJS.Signals | number | null>((resolve) => child.on('exit', (code, signal) => resolve(signal ?? code)));
      const deadline = Date.now() + 60_000;
      // Every connection of a stdio case has a state folder: wait until a case holds one.
      while (stateFolders().length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      expect(stateFolders().length).toBeGreaterThan(0);
      child.kill('SIGINT');
      expect(await exited).toBe('SIGINT');
      expect(stateFolders()).toEqual([]);
    },
    90_000,
  );
});
