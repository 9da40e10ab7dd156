/**
 * The probe, the first handshake of a run, puts a fault at the handshake where it lies
 * (spec: conformance#verdicts, TAP-CONF-002, TAP-CONF-004): tap-conform against the small broken
 * agents of fixtures/agents/startup, each run through the bin, and the reading of a dead agent's
 * standard error.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { lastWords } from '../probe.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const CONFORM = join(ROOT, 'bin/tap-conform.mjs');
const work = mkdtempSync(join(tmpdir(), 'tap-probe-test-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
  // biome-ignore lint/suspicious/noExplicitAny: the JSON report, read by field
  report?: any;
}

/** Runs the whole suite (no filter) against a startup agent, with a JSON report. */
function conform(agent: string): Promise<Run> {
  const json = join(work, `${agent}.json`);
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CONFORM, '--no-color', '--json', json, '--', 'node', `fixtures/agents/startup/${agent}.mjs`], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('close', (code) => {
      let report: unknown;
      try {
        report = JSON.parse(readFileSync(json, 'utf8'));
      } catch {
        report = undefined;
      }
      resolve({ code, stdout, stderr, report });
    });
  });
}

/** The run stopped after the handshake case, which failed; the other cases of the suite did not run. */
function expectStoppedAtHandshake(run: Run): void {
  expect(run.code, run.stderr).toBe(1);
  expect(run.report.cases.map((c: { id: string; verdict: string }) => [c.id, c.verdict])).toEqual([['core.handshake.complete', 'FAIL']]);
  expect(run.report.level).toBe('Not certified');
  expect(run.report.certified).toBe(false);
  expect(run.report.stopped.cases_not_run).toBeGreaterThan(200);
  expect(run.stdout).toMatch(/^stopped: .+; \d+ more cases did not run\. Fix this and run again\.$/m);
  expect(run.stderr).toMatch(/The run stops after the handshake case \(core\.handshake\.complete\)\.\n/);
  expect(run.stderr).toMatch(/tap-conform: Not certified: the run stopped after 1 case at a fault of the agent .*\(exit 1\)\n$/);
  expect(`${run.stdout}${run.stderr}`).not.toContain('harness bug');
}

describe('an invalid handshake.ack is the agent’s fault, said once, and the run stops (TAP-CONF-002)', { timeout: 60_000 }, () => {
  it('an agent_id that is no identifier ("My Agent"): its schema errors, with no ready echoed back', async () => {
    const run = await conform('ack-bad-agent-id');
    expectStoppedAtHandshake(run);
    const errors =
      '/source "My Agent" is not an identifier (lowercase letters, digits, "_" and "-", in dot-separated segments); /payload/agent/agent_id "My Agent" is not an identifier';
    // Up front, on stderr, and in the failed case of the summary, not only in the JSON report.
    expect(run.stderr).toContain(`tap-conform: the agent's handshake.ack is invalid against schemas/v1: ${errors}`);
    expect(run.stdout).toContain(`      the agent's handshake.ack is invalid against schemas/v1: ${errors}`);
    expect(run.stdout).toContain('; the handshake stops there');
    // The harness sent no handshake.ready: it would have carried the agent's invalid id.
    const sent = run.report.cases[0].transcript.filter((e: { dir: string }) => e.dir === 'out').map((e: { type: string }) => e.type);
    expect(sent).toEqual(['handshake.init']);
  });

  it('a card that fails agent-card.schema.json: its schema errors', async () => {
    const run = await conform('ack-invalid-card');
    expectStoppedAtHandshake(run);
    const errors =
      "/payload/agent must have required property 'limits'; /payload/agent/capabilities/0 must have required property 'version'";
    expect(run.stderr).toContain(`the agent's handshake.ack is invalid against schemas/v1: ${errors}`);
    expect(run.stdout).toContain(`the agent's handshake.ack is invalid against schemas/v1: ${errors}; the handshake stops there`);
  });
});

describe('a banner on stdout fails the run at once and stops it (TAP-STDIO-003, TAP-CONF-004)', () => {
  it('quotes the line and says where logs go', { timeout: 60_000 }, async () => {
    const run = await conform('banner');
    expectStoppedAtHandshake(run);
    expect(run.stderr).toContain(
      'tap-conform: the agent wrote a line that is not a TAP message to its standard output at start-up: "Mini agent v0.3.1 ready (model: small, tools: 3)". Over stdio, standard output carries only TAP messages, one per line; write banners and logs to standard error (spec: bindings-stdio#streams, TAP-STDIO-003)',
    );
    expect(run.stdout).toContain('the agent wrote a non-protocol line to stdout: "Mini agent v0.3.1 ready (model: small, tools: 3)"');
  });
});

describe('an agent that dies before the handshake', () => {
  it('is quoted by the line of its error, not by the stack frames under it', { timeout: 60_000 }, async () => {
    const run = await conform('crash-before-handshake');
    expect(run.code).toBe(3);
    expect(run.stderr).toBe(
      "tap-conform: node fixtures/agents/startup/crash-before-handshake.mjs exited with code 1 before answering the handshake; its stderr says: TypeError: Cannot read properties of null (reading 'tools') (exit 3)\n",
    );
  });

  it('reads the error line of Node, of Python, and a log without one', () => {
    const node = [
      'file:///app/agent.mjs:4',
      '  return config.tools.map((t) => t.name);',
      '                ^',
      '',
      "Error [ERR_MODULE_NOT_FOUND]: Cannot find module '/app/tools.js' imported from /app/agent.mjs",
      '    at finalizeResolution (node:internal/modules/esm/resolve:265:11)',
      '    at moduleResolve (node:internal/modules/esm/resolve:933:10)',
      '',
      'Node.js v20.20.2',
    ];
    expect(lastWords(node)).toBe(
      "its stderr says: Error [ERR_MODULE_NOT_FOUND]: Cannot find module '/app/tools.js' imported from /app/agent.mjs",
    );
    const python = [
      'Traceback (most recent call last):',
      '  File "/app/agent.py", line 3, in <module>',
      '    import tools',
      "ModuleNotFoundError: No module named 'tools'",
    ];
    expect(lastWords(python)).toBe("its stderr says: ModuleNotFoundError: No module named 'tools'");
    expect(lastWords(['starting', 'loading model', '    at nothing', 'giving up'])).toBe(
      'its stderr ends: starting | loading model | giving up',
    );
    expect(lastWords([])).toBe('');
  });
});
