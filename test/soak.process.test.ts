/**
 * The short run of the standing attack suite (tools/soak.ts --short): fuzzing over both bindings,
 * the eviction and amplification attacks, SIGKILLs mid-task, a torn journal and a hostile agent
 * under the harness must end with no crash, loss, doubled effect, growth or leftover process.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

describe('tools/soak.ts --short', () => {
  it('ends with 0 crashes, 0 lost, 0 doubled and 0 leftover processes', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'tools/soak.ts'), '--short'], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (d) => (output += d));
    child.stderr.on('data', (d) => (output += d));
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    expect(output).toMatch(/frames_sent\s+[1-9]/);
    // On a failure its figures and notes (the end of the output) say which attack broke what.
    expect(code, `tools/soak.ts --short exited ${code}:\n${output.slice(-4000)}`).toBe(0);
  }, 300_000);
});
