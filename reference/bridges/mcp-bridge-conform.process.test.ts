/**
 * The bridge certified the way users run it: the compiled tap-conform bin starts
 * `node bin/tap-bridge.mjs mcp -- <bin of a real MCP server>` once per case, in conformance mode,
 * and the conformance capabilities come from the agent runtime beside the server's tools
 * (spec: bridge-mcp-server#conformance). A selection of cases touches the handshake (the card with
 * the tools), a task, the end of input and a signal; the whole suite in front of
 * mcp-server-everything is a run of its own (README.md, "Bridges"), too long for npm test.
 * After each run, no process of the MCP servers the cases started is left.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const BIN = join(ROOT, 'node_modules/.bin');
const work = mkdtempSync(join(tmpdir(), 'tap-bridge-conform-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** Cases that touch the bridge's own paths: the card with the tools, a task, the end of input and a signal (both close the server). */
const CASES = ['core.handshake.complete', 'core.handshake.ack-card', 'tasks.lifecycle.echo', 'stdio.eof.orderly', 'stdio.signal.sigterm'];

interface Run {
  code: number | null;
  stderr: string;
  report: { cases: { id: string; verdict: string }[] } | undefined;
}

/** Runs tap-conform on CASES against the bridge in front of `server`, with `env` added. */
function conform(name: string, server: string[], env: Record<string, string> = {}): Promise<Run> {
  const json = join(work, `${name}.json`);
  const only = CASES.flatMap((id) => ['--only', id]);
  const args = [
    join(ROOT, 'bin/tap-conform.mjs'),
    '--no-color',
    '--json',
    json,
    ...only,
    '--',
    'node',
    'bin/tap-bridge.mjs',
    'mcp',
    '--',
    ...server,
  ];
  return new Promise((resolve) => {
    const child = spawn(process.execPath, args, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    child.on('close', (code) => {
      let report: Run['report'];
      try {
        report = JSON.parse(readFileSync(json, 'utf8'));
      } catch {
        report = undefined;
      }
      resolve({ code, stderr, report });
    });
  });
}

/** The processes of this user whose command line or environment holds `marker`. */
function processesWith(marker: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    for (const file of ['cmdline', 'environ']) {
      try {
        if (readFileSync(`/proc/${entry}/${file}`, 'latin1').includes(marker)) found.push(Number(entry));
      } catch {
        // Gone, or not ours to read.
      }
    }
  }
  return [...new Set(found)];
}

function expectEveryCasePassed(run: Run): void {
  expect(run.code, run.stderr.slice(-2000)).toBe(0);
  expect(run.report?.cases.map((c) => [c.id, c.verdict]).sort()).toEqual(CASES.map((id) => [id, 'PASS']).sort());
}

describe('tap-conform in front of the bridge and real MCP servers (spec: bridge-mcp-server#conformance)', { timeout: 120_000 }, () => {
  it('mcp-server-memory, its file in a temporary folder: every selected case passes and no server process is left (TAP-BRIDGE-124, TAP-BRIDGE-122)', async () => {
    const file = join(work, 'memory', 'graph.jsonl');
    mkdirSync(join(work, 'memory'));
    const run = await conform('memory', [join(BIN, 'mcp-server-memory')], { MEMORY_FILE_PATH: file });
    expectEveryCasePassed(run);
    expect(processesWith(file)).toEqual([]);
  });

  it('mcp-server-filesystem on a temporary folder: every selected case passes and no server process is left (TAP-BRIDGE-124, TAP-BRIDGE-122)', async () => {
    const folder = join(work, 'files');
    mkdirSync(folder);
    const run = await conform('filesystem', [join(BIN, 'mcp-server-filesystem'), folder]);
    expectEveryCasePassed(run);
    expect(processesWith(folder)).toEqual([]);
  });
});
