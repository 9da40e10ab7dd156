/**
 * Runs the demo as a user would (its own process, three agent processes over stdio) and checks
 * what it claims: the pipeline completed, the plan was approved before any code was written,
 * the lint was cancelled, and the transcript is valid TAP.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import type { TapMessage } from '../../../schemas/src/index.ts';
import { checkTranscript, parseTranscript } from '../../core/history.ts';
import { validateMessage } from '../../core/index.ts';

const RUN = fileURLToPath(new URL('./run.ts', import.meta.url));

describe('the demo (run.ts)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'tap-demo-test-'));
  const transcriptPath = join(dir, 'transcript.ndjson');
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  let stdout = '';
  let status: number | null = null;
  let lines: Array<{ dir: string; message: TapMessage }> = [];

  it('runs to the end and exits 0', { timeout: 180_000 }, () => {
    const run = spawnSync(process.execPath, ['--import', import.meta.resolve('tsx'), RUN, '--transcript', transcriptPath], {
      encoding: 'utf8',
      timeout: 170_000,
    });
    stdout = run.stdout;
    status = run.status;
    expect(run.stderr).toBe('');
    expect(status).toBe(0);
    lines = parseTranscript(readFileSync(transcriptPath, 'utf8')) as typeof lines;
    expect(stdout).toContain(`transcript     ${transcriptPath}`);
    expect(stdout).toMatch(/coordinator → coder\s+plan\.decision\s+approved/);
  });

  const results = () => lines.filter((l) => l.message.type === 'task.result').map((l) => l.message);
  const requestFor = (capability: string) =>
    lines.find((l) => l.message.type === 'task.request' && (l.message.payload as { capability: string }).capability === capability)!
      .message;

  it('completes analyse → code → review', () => {
    for (const capability of ['requirements.analyse', 'code.generate', 'code.review']) {
      const taskId = requestFor(capability).task_id;
      const result = results().find((m) => m.task_id === taskId);
      expect(result?.payload, capability).toMatchObject({ status: 'completed' });
    }
    const review = results().find((m) => m.task_id === requestFor('code.review').task_id)!;
    expect((review.payload as { output: { verdict: string } }).output.verdict).toBe('approved');
  });

  it('approves the plan before any code is written (spec: plans#approval)', () => {
    const taskId = requestFor('code.generate').task_id;
    const index = (pred: (m: TapMessage) => boolean) => lines.findIndex((l) => l.message.task_id === taskId && pred(l.message));
    const submitted = index((m) => m.type === 'plan.submit');
    const approved = index((m) => m.type === 'plan.decision' && (m.payload as { decision: string }).decision === 'approved');
    const firstWrite = index((m) => m.type === 'task.event' && (m.payload as { kind: string }).kind === 'output');
    const result = index((m) => m.type === 'task.result');
    expect(submitted).toBeGreaterThan(-1);
    expect(submitted).toBeLessThan(approved);
    expect(approved).toBeLessThan(firstWrite);
    expect(firstWrite).toBeLessThan(result);
  });

  it('cancels the optional lint mid-run, and it ends cancelled', () => {
    const taskId = requestFor('code.lint').task_id;
    const stream = lines.filter((l) => l.message.task_id === taskId).map((l) => l.message);
    const cancel = stream.findIndex((m) => m.type === 'task.cancel');
    const progress = stream.findIndex((m) => m.type === 'task.event' && (m.payload as { kind: string }).kind === 'progress');
    expect(progress).toBeGreaterThan(-1);
    expect(progress).toBeLessThan(cancel);
    expect(stream.at(-1)).toMatchObject({ type: 'task.result', payload: { status: 'cancelled' } });
  });

  it('writes a transcript whose every message validates against the schemas and obeys the history rules', () => {
    expect(lines.length).toBeGreaterThan(30);
    for (const l of lines) {
      expect(['requester->agent', 'agent->requester']).toContain(l.dir);
      expect(validateMessage(l.message), `${l.message.type} ${l.message.message_id}`).toBeNull();
    }
    // The transcript interleaves the coordinator's three sessions, whose agents keep their own
    // clocks: the history rules (timestamps included) hold per session.
    const bySession = new Map<string, typeof lines>();
    for (const l of lines) {
      const agent = l.dir === 'agent->requester' ? l.message.source : l.message.target;
      bySession.set(agent, [...(bySession.get(agent) ?? []), l]);
    }
    expect(bySession.size).toBe(3);
    for (const [agent, session] of bySession) expect(checkTranscript(session), agent).toEqual([]);
    // Every session said farewell both ways.
    expect(lines.filter((l) => l.message.type === 'session.farewell')).toHaveLength(6);
  });
});
