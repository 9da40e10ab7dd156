/**
 * History compaction: older entries moved to tasks/history/<task_id>.<epoch>.jsonl behind a
 * summary entry, the file complete before a record refers to it and never changed after, and
 * history_ref values that are not bare file names refused
 * (spec: bindings-workspace#history-compaction).
 */
import { join } from 'node:path';
import { check, jsonEqual, show, verdictOf } from '../../cases/kit.ts';
import type { TaskRecord } from '../../../reference/workspace/index.ts';
import { fail } from '../../verdict.ts';
import { expectRecord, finishWithin, needPhases, stop, wsCase } from '../kit.ts';
import { listDir, readOrNull } from '../observe.ts';
import { PHASES, entry, publishRecord, record } from '../records.ts';
import { refusal } from './refused.ts';

type Entry = TaskRecord['context']['history'][number];

/** The same entry, as far as a reader can tell: agent, phase, input, output and artifacts. */
function sameEntry(a: Entry | undefined, b: Entry | undefined): boolean {
  return (
    !!a &&
    !!b &&
    a.agent === b.agent &&
    a.phase === b.phase &&
    jsonEqual(a.input, b.input) &&
    jsonEqual(a.output, b.output) &&
    jsonEqual(a.artifacts, b.artifacts)
  );
}

function parseLines(bytes: Buffer): Entry[] | null {
  try {
    return bytes
      .toString('utf8')
      .split('\n')
      .filter((l) => l.trim() !== '')
      .map((l) => JSON.parse(l) as Entry);
  } catch {
    return null;
  }
}

export const historyCases = [
  wsCase({
    id: 'workspace.history.compaction',
    title:
      'History beyond history_limit moves to tasks/history/<id>.<epoch>.jsonl behind a summary entry; the file is complete first and never changed after',
    spec: 'bindings-workspace#history-compaction',
    requirements: ['TAP-WKS-024'],
    budgetMs: 40_000,
    async run(ctx, run) {
      needPhases(run, PHASES.echo, PHASES.sleep);
      const limit = run.ws.config.history_limit;
      const id = run.taskId('history');
      const earlier = Array.from({ length: limit }, (_, i) => entry(`tap-conform.p${i}`, `earlier-${i}`, { step: i }, { done: i }));
      const input = { ms: 10 };
      const rec = record(id, PHASES.echo, input, {
        current_phase: `earlier-${limit - 1}`,
        metadata: { pipeline: [PHASES.echo, PHASES.sleep] },
        context: { history: earlier, current_input: input },
      });
      await publishRecord(run.ws, 'pending', rec);
      // Watch the history files of the task while the two phases run.
      const files = new Map<string, { first: Buffer; last: Buffer; seenAt: number }>();
      let refAtFirstSight: { ref: string; present: boolean } | null = null;
      const historyDir = run.ws.paths.history;
      const deadline = performance.now() + finishWithin(run) * 2;
      let final: Awaited<ReturnType<typeof expectRecord>> | null = null;
      while (performance.now() < deadline && !final) {
        for (const name of (await listDir(historyDir)).filter((n) => n.startsWith(`${id}.`) && !n.startsWith('.tmp-'))) {
          const bytes = await readOrNull(join(historyDir, name));
          if (!bytes) continue;
          const known = files.get(name);
          if (!known) files.set(name, { first: bytes, last: bytes, seenAt: performance.now() });
          else known.last = bytes;
        }
        for (const dir of ['pending', 'completed'] as const) {
          const text = await readOrNull(run.ws.paths.record(dir, id));
          if (!text) continue;
          let r: TaskRecord | null = null;
          try {
            r = JSON.parse(text.toString('utf8')) as TaskRecord;
          } catch {
            continue;
          }
          if (r.history_ref && !refAtFirstSight) {
            const bytes = await readOrNull(join(historyDir, r.history_ref));
            refAtFirstSight = { ref: r.history_ref, present: bytes !== null && (parseLines(bytes)?.length ?? 0) > 0 };
          }
          if (dir === 'completed') final = await expectRecord(ctx, run, 'completed', id, 0, 'the task after both phases');
        }
        await new Promise((r) => setTimeout(r, 10));
      }
      if (!final) final = await expectRecord(ctx, run, 'completed', id, 0, 'the task after both phases');
      await ctx.sleep(run.leaseMs / 2);
      for (const [name, f] of files) f.last = (await readOrNull(join(historyDir, name))) ?? Buffer.alloc(0);
      ctx.note(`history files seen: ${show([...files.keys()])}; first record referring to one: ${show(refAtFirstSight)}`);
      const r = final.record;
      const h = r.context.history;
      const ref = r.history_ref;
      if (!ref)
        stop(
          fail(
            `the record has ${h.length} history entries and no history_ref; history_limit is ${limit}`,
            `compaction into tasks/history/ (history_limit ${limit})`,
            `${h.length} entries, no history_ref`,
          ),
        );
      const compacted = parseLines((await readOrNull(join(historyDir, ref))) ?? Buffer.alloc(0));
      const own = h.filter((e) => e.summary !== true);
      const want = [
        ...earlier,
        { agent: run.agentId, phase: PHASES.echo, input, output: input },
        { agent: run.agentId, phase: PHASES.sleep, input, output: { slept_ms: 10 } },
      ];
      const whole = [...(compacted ?? []), ...own];
      const changed = [...files].filter(([, f]) => !f.first.equals(f.last)).map(([n]) => n);
      return verdictOf(
        `${compacted?.length} entries in ${ref}, ${own.length} kept after the summary`,
        check(
          ref === `${id}.${r.state.epoch}.jsonl`,
          `history_ref is ${show(ref)}`,
          `${id}.${r.state.epoch}.jsonl (task id and the epoch of the claim that compacted)`,
          show(ref),
        ),
        check(
          compacted !== null,
          `tasks/history/${ref} is missing or not one JSON entry per line`,
          'one history entry per line',
          'unreadable',
        ),
        check(
          h.length <= limit,
          `the record keeps ${h.length} history entries; history_limit is ${limit}`,
          `at most ${limit}`,
          String(h.length),
        ),
        check(
          h[0]?.summary === true && h.filter((e) => e.summary === true).length === 1,
          "the record's history does not start with one entry marked summary: true",
          'a summary entry first',
          show(h.map((e) => e.summary === true)),
        ),
        check(
          whole.length === want.length &&
            whole.every((e, i) =>
              i < earlier.length
                ? sameEntry(e, want[i] as Entry)
                : e.agent === want[i]!.agent && e.phase === want[i]!.phase && jsonEqual(e.output, want[i]!.output),
            ),
          'the history file and the kept entries together are not the whole history, oldest first',
          show(
            want.map((e) => `${e.agent}/${e.phase}`),
            500,
          ),
          show(
            whole.map((e) => `${e.agent}/${e.phase}`),
            500,
          ),
        ),
        check(
          refAtFirstSight === null || refAtFirstSight.present,
          `a record referred to ${refAtFirstSight?.ref} before that file held its entries`,
          'the history file complete before the record refers to it',
          'missing or empty',
        ),
        check(
          changed.length === 0,
          `history file${changed.length > 1 ? 's' : ''} ${changed.join(', ')} changed after being written`,
          'history files never modified',
          changed.join(', '),
        ),
      );
    },
  }),

  wsCase({
    id: 'workspace.history.bad-ref',
    title: 'A record whose history_ref is a path, not a bare file name, ends in failed/ with INVALID_MESSAGE',
    spec: 'bindings-workspace#history-compaction',
    requirements: ['TAP-WKS-025'],
    async run(ctx, run) {
      needPhases(run, PHASES.echo);
      const id = run.taskId('bad-ref');
      const rec = record(id, PHASES.echo, { x: 1 }) as TaskRecord & { history_ref?: string };
      rec.history_ref = '../../tap-workspace.jsonl';
      await publishRecord(run.ws, 'pending', rec);
      return refusal(ctx, run, id, ['INVALID_MESSAGE'], 'a history_ref that climbs out of tasks/history/');
    },
  }),
];
