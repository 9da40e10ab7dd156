/**
 * An agent started through a launcher (npx, npm, a shell) that keeps the signal for itself: the
 * signal cases still fail, and say why and what to run instead.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { launcherOf } from '../target.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const CONFORM = join(ROOT, 'bin/tap-conform.mjs');
const AGENT = join(ROOT, 'bin/tap-reference-agent.mjs');

describe('a stdio target run through a launcher', () => {
  it('is recognised by its command name, wherever it lives', () => {
    const stdio = (command: string) => ({ kind: 'stdio' as const, command, args: [], display: command });
    expect(launcherOf(stdio('npx'))).toBe('npx');
    expect(launcherOf(stdio('/usr/bin/sh'))).toBe('sh');
    expect(launcherOf(stdio('./my-agent'))).toBeNull();
    expect(launcherOf(stdio('node'))).toBeNull();
    expect(launcherOf({ kind: 'websocket', url: 'ws://127.0.0.1:1/', display: 'ws' })).toBeNull();
  });

  it.skipIf(process.platform !== 'linux')(
    'fails stdio.signal.sigterm with a hint to name the agent itself',
    async () => {
      const run = await new Promise<{ code: number | null; output: string }>((resolve) => {
        // "; true" keeps the shell in between: it does not exec the agent, and takes SIGTERM itself.
        const child = spawn(
          process.execPath,
          [CONFORM, '--only', 'stdio.signal.sigterm', '--', 'sh', '-c', `"${process.execPath}" "${AGENT}"; true`],
          { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
        );
        let output = '';
        child.stdout.on('data', (d) => (output += d));
        child.stderr.on('data', (d) => (output += d));
        child.on('exit', (code) => resolve({ code, output }));
      });
      expect(run.code).toBe(1);
      expect(run.output).toContain('the agent exited with signal SIGTERM (the command is sh, which took the signal itself');
      expect(run.output).toContain('node_modules/.bin/<name>');
    },
    60_000,
  );
});
