/**
 * bin/bundled.mjs: the reference agent starts from a cached bundle that is rebuilt whenever one
 * of its inputs is newer, and from the sources through tsx when TAP_NO_BUNDLE=1.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync, statSync, utimesSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const AGENT = join(ROOT, 'bin/tap-reference-agent.mjs');
const CACHE = join(ROOT, 'node_modules/.cache/tap-agent-protocol');
const NAME = `reference-agent-${createHash('sha256').update(ROOT).digest('hex').slice(0, 8)}`;
const BUNDLE = join(CACHE, `${NAME}.mjs`);

/** Starts the agent on an empty input: it must print its help and exit 0. */
function startHelp(env: NodeJS.ProcessEnv = {}) {
  const r = spawnSync(process.execPath, [AGENT, '--help'], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    encoding: 'utf8',
    timeout: 60_000,
  });
  expect(r.status, r.stderr).toBe(0);
  expect(r.stdout).toContain('Usage: tap-reference-agent');
}

describe('the reference agent bin', () => {
  it('builds a bundle that lists its inputs, and rebuilds it when an input is newer', { timeout: 120_000 }, () => {
    startHelp();
    const inputs = JSON.parse(readFileSync(join(CACHE, `${NAME}.inputs.json`), 'utf8')) as string[];
    expect(inputs).toContain('reference/agents/reference-agent.ts');
    expect(inputs).toContain('reference/core/decode.ts');
    const past = new Date(Date.now() - 86_400_000);
    utimesSync(BUNDLE, past, past);
    startHelp();
    expect(statSync(BUNDLE).mtimeMs).toBeGreaterThan(past.getTime() + 60_000);
  });

  it('runs the sources through tsx with TAP_NO_BUNDLE=1', { timeout: 120_000 }, () => {
    startHelp({ TAP_NO_BUNDLE: '1' });
  });
});
