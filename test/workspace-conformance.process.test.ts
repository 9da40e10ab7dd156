/**
 * tap-conform over the workspace binding (spec: bindings-workspace, conformance#verdicts): the
 * reference workspace agent is certified by `tap-conform --workspace`, and every broken agent of
 * fixtures/agents/broken-workspace is failed by the case that targets its rule while it passes a
 * control case, so each FAIL comes from the break.
 *
 * Each harness run is a child process (`node bin/tap-conform.mjs --workspace <dir> … --json
 * <file>`), all started together. The reference run is the suite but its floods: the workspace
 * profile and every message-protocol case over mailboxes, where every case passes except those
 * SKIPPED for the binding (another binding's, or a connection close a mailbox cannot show). The
 * floods (thousands of tiny tasks against the agent's tables) are left out with --skip: over
 * mailboxes they take three quarters of the run's time, and they test the runtime's tables, which
 * the in-memory, stdio and WebSocket runs of the same runtime test in full.
 * TAP_SELFTEST_TIME_SCALE sets --time-scale (default: from the load of the machine, at most 3).
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WORKSPACE_CASES } from '../conformance/workspace/cases/index.ts';
import { loadTimeScale } from '../conformance/test/time-scale.testkit.ts';
import { skipReason } from '../conformance/workspace/protocol.ts';
import { PUNCTUALITY_MISS } from '../conformance/verdict.ts';
import { scratchBase } from '../reference/workspace/workspace.testkit.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const CONFORM = join(ROOT, 'bin/tap-conform.mjs');
// A 2 s heartbeat and a 10 s resume window let the timed cases run without waiting out 15 s
// heartbeats and a 5 min window (the defaults); 2 s rather than the 1 s floor (spec: limits#heartbeats)
// leaves a mailbox that polls every 200 ms room to answer each ping on a loaded machine.
const REFERENCE = ['node', 'dist/reference/agents/workspace-agent.js', '--heartbeat-ms', '2000', '--resume-window-ms', '10000'];
const MANIFEST = join(ROOT, 'fixtures/agents/broken-workspace/manifest.json');
/** The flood cases the reference run leaves out (see above). */
const FLOODS = [
  'core.limits.retention-per-principal',
  'core.limits.duplicate-table-hostile',
  'idempotency.duplicate-table',
  'resume.retention.unavailable',
];

interface Entry {
  name: string;
  command: string[];
  breaks: string;
  requirement: string;
  expected_case: string;
  control_case: string;
  binding: 'workspace';
}

interface Run {
  code: number | null;
  verdicts: Map<string, { verdict: string; detail: string }>;
  certified?: boolean;
  scope?: { cases: number; of: number; skip?: string[] };
  stderr: string;
}

const manifest = JSON.parse(readFileSync(MANIFEST, 'utf8')) as Entry[];
const requirementIds = new Set(
  (JSON.parse(readFileSync(join(ROOT, 'spec/1.0/requirements.json'), 'utf8')) as { requirements: { id: string }[] }).requirements.map(
    (r) => r.id,
  ),
);
const TIME_SCALE = loadTimeScale(3);
const scratch = mkdtempSync(join(scratchBase(), 'tap-ws-conform-'));

/** Runs tap-conform --workspace on a fresh directory and reads its JSON report. */
function conform(name: string, only: string[], command: string[], skip: string[] = []): Promise<Run> {
  const report = join(scratch, `${name}.json`);
  const args = [CONFORM, '--workspace', join(scratch, name), '--no-color', '--time-scale', String(TIME_SCALE), '--json', report];
  for (const o of only) args.push('--only', o);
  for (const o of skip) args.push('--skip', o);
  args.push('--', ...command);
  return new Promise((resolve) => {
    execFile('node', args, { cwd: ROOT, maxBuffer: 32 * 1024 * 1024, timeout: 300_000 }, (err, _stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : null) : 0;
      const verdicts = new Map<string, { verdict: string; detail: string }>();
      let certified: boolean | undefined;
      let scope: Run['scope'];
      try {
        const r = JSON.parse(readFileSync(report, 'utf8')) as {
          certified: boolean;
          scope?: Run['scope'];
          cases: { id: string; verdict: string; detail: string }[];
        };
        certified = r.certified;
        scope = r.scope;
        for (const c of r.cases) verdicts.set(c.id, { verdict: c.verdict, detail: c.detail });
      } catch {
        // no report: the assertions below say what the run printed
      }
      resolve({ code, verdicts, certified, scope, stderr });
    });
  });
}

const runs = new Map<string, Promise<Run>>();

beforeAll(() => {
  runs.set('reference', conform('reference', [], REFERENCE, FLOODS));
  for (const e of manifest) runs.set(e.name, conform(e.name, [e.expected_case, e.control_case], e.command));
});

afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe('tap-conform --workspace (spec: bindings-workspace)', () => {
  it('passes the reference workspace agent in every case but the floods, bar those the binding rules out', async () => {
    const r = await runs.get('reference')!;
    // One agent process serves every mailbox session of the run, with the card it started with: the
    // case of a short max_task_seconds runs against a stdio agent, which takes it per case.
    const forBinding = (id: string, detail: string) =>
      / binding only$/.test(detail) ||
      detail === `over mailboxes: ${skipReason(id)}` ||
      (id === 'tasks.deadline.max-task-seconds' && detail.startsWith('the agent declares max_task_seconds 3600'));
    // A punctuality miss (NON-STRICT on timing alone) is run again once, alone: a loaded machine
    // runs the agent's timers late, not the agent. A miss the second time stays.
    const late = [...r.verdicts].filter(([, v]) => v.verdict === 'NON-STRICT' && PUNCTUALITY_MISS.test(v.detail)).map(([id]) => id);
    const again = late.length > 0 ? await conform('reference-again', late, REFERENCE) : undefined;
    const verdicts = new Map([...r.verdicts, ...(again?.verdicts ?? [])]);
    const bad = [...verdicts].filter(([id, v]) => v.verdict !== 'PASS' && !(v.verdict === 'SKIPPED' && forBinding(id, v.detail)));
    expect(
      bad.map(([id, v]) => `${id}: ${v.verdict} ${v.detail}`),
      `${r.stderr.slice(-2000)}${again ? `\nrun again alone: ${late.join(', ')}\n${again.stderr.slice(-1000)}` : ''}`,
    ).toEqual([]);
    expect(again?.code ?? r.code, r.stderr.slice(-2000)).toBe(0);
    // Leaving the floods out makes it a partial run, which never certifies.
    expect(r.certified).toBe(false);
    expect(r.scope).toMatchObject({ skip: FLOODS, cases: r.scope!.of - FLOODS.length });
    for (const id of FLOODS) expect(r.verdicts.has(id), `${id} was skipped`).toBe(false);
    for (const c of WORKSPACE_CASES) expect(r.verdicts.has(c.id), `${c.id} ran`).toBe(true);
    expect(
      [...r.verdicts.keys()].some((id) => !id.startsWith('workspace.')),
      'message-protocol cases ran over mailboxes',
    ).toBe(true);
  }, 240_000);

  it('lists workspace twins that each name a requirement and two workspace cases', () => {
    const ids = new Set(WORKSPACE_CASES.map((c) => c.id));
    expect(manifest.length).toBeGreaterThanOrEqual(2);
    for (const e of manifest) {
      expect(requirementIds.has(e.requirement), `${e.name}: ${e.requirement}`).toBe(true);
      expect(ids.has(e.expected_case), `${e.name}: ${e.expected_case}`).toBe(true);
      expect(ids.has(e.control_case), `${e.name}: ${e.control_case}`).toBe(true);
      expect(WORKSPACE_CASES.find((c) => c.id === e.expected_case)!.requirements).toContain(e.requirement);
    }
  });

  for (const e of manifest) {
    it(`fails ${e.name} (${e.requirement}) in ${e.expected_case} and passes it in ${e.control_case}`, async () => {
      const r = await runs.get(e.name)!;
      expect(
        r.verdicts.get(e.expected_case)?.verdict,
        `${e.expected_case}: ${r.verdicts.get(e.expected_case)?.detail ?? r.stderr.slice(-1500)}`,
      ).toBe('FAIL');
      expect(
        r.verdicts.get(e.control_case)?.verdict,
        `${e.control_case}: ${r.verdicts.get(e.control_case)?.detail ?? r.stderr.slice(-1500)}`,
      ).toBe('PASS');
      expect(r.code).toBe(1);
    }, 240_000);
  }
});
