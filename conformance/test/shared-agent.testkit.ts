/**
 * Test support for a run of the whole suite against one agent process that serves every case, with
 * a card that allows 8 tasks at once (the README's example): what such a run must show — no case
 * FAILs or ERRORs, tap-conform says it keeps its load within the card's limit, and the agent
 * answered BUSY only in the cases that fill a limit on purpose (spec: limits#concurrency,
 * conformance#verdicts TAP-CONF-002). nats-durable.server.test.ts holds its run over NATS, with
 * durable queues, to it. Over WebSocket the same agent is the README's (its card allows 8 tasks at
 * once), certified strictly with its own run key by npm test's docs step, where a BUSY the suite's
 * load drew would make a case ERROR; and memory-suite-limits.slow.test.ts holds the suite's
 * scheduling (the same gate of conformance/load.ts) to answering BUSY only where a case asks for
 * it, on every case.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';

/** The card limit of these runs, passed to the reference agent as --max-concurrent-tasks. */
export const SHARED_LIMIT = 8;

/** Per case id of a run's transcripts folder (--transcripts): how many times the agent answered BUSY. */
export function busyAnswers(transcripts: string): Map<string, number> {
  const busy = new Map<string, number>();
  // A run that ended before its first case wrote no transcripts: the assertions say what it printed.
  for (const file of existsSync(transcripts) ? readdirSync(transcripts) : []) {
    const answered = readFileSync(join(transcripts, file), 'utf8')
      .split('\n')
      .filter((l) => l.includes('"dir":"in"') && l.includes('\\"type\\":\\"error\\"') && l.includes('\\"code\\":\\"BUSY\\"')).length;
    if (answered > 0) busy.set(file.replace(/\.ndjson$/, ''), answered);
  }
  return busy;
}

/** No case failed or errored; the agent answered BUSY only where a case fills a limit on purpose. */
export function expectWithinLimits(run: {
  report?: { cases: { id: string; verdict: string; detail: string }[] } | undefined;
  stderr: string;
  busy: Map<string, number>;
}): void {
  const bad = (run.report?.cases ?? []).filter((c) => c.verdict === 'FAIL' || c.verdict === 'ERROR');
  expect(bad.map((c) => `${c.verdict} ${c.id}: ${c.detail}`)).toEqual([]);
  expect(run.stderr).toContain(
    `tap-conform: the agent's card allows ${SHARED_LIMIT} tasks at once (limits.max_concurrent_tasks); every case shares this agent, so a case starts only when its tasks fit beside those the suite holds there`,
  );
  // tasks.concurrency.busy asks for a session limit of 1 and goes past it; the retention case floods the agent alone.
  const elsewhere = [...run.busy.keys()].filter((id) => id !== 'tasks.concurrency.busy' && id !== 'core.limits.retention-per-principal');
  expect(elsewhere).toEqual([]);
  expect(run.busy.get('tasks.concurrency.busy')).toBe(1);
}
