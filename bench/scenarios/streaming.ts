/**
 * Scenario 2, streaming: one tap.test.stream task emitting n output events, received through the
 * client's event iterator, against the bare floor streaming the same bytes (a captured TAP
 * task.event as the template, parsed once per event on the receiving side) over the same transport.
 */
import type { Budget } from '../lib/options.ts';
import { compare, missingBaseline, notRun, ratioRange, type Row } from '../lib/report.ts';
import { spread } from '../lib/stats.ts';
import * as systems from '../lib/systems.ts';
import type { System, TransportKind } from '../lib/systems.ts';
import { oneLine } from './roundtrip.ts';

const SCENARIO = '2. Streaming (tap.test.stream)';

const MAKERS: Record<
  TransportKind,
  { tap: () => Promise<System>; bare: () => Promise<System & { requester: { template: Record<string, unknown> } }> }
> = {
  stdio: { tap: () => systems.tapStdio(), bare: () => systems.bareStdio() },
  websocket: { tap: () => systems.tapWebSocket(), bare: () => systems.bareWebSocket() },
  memory: { tap: () => systems.tapMemory(), bare: () => systems.bareMemory() },
};

/** The streaming target (stdio only). */
const STREAM_TARGET = 'Streaming at least 50 % of the floor over stdio';

/** The row ids this scenario produces. */
export function streamingRowIds(): string[] {
  return (Object.keys(MAKERS) as TransportKind[]).map((t) => `streaming.${t}`);
}

/** A real task.event of kind output as the reference agent sends it, for the floor to copy. */
async function captureEvent(): Promise<{ template: Record<string, unknown>; bytes: number }> {
  let text: string | undefined;
  const tap = await systems.tapMemory(16, (entry) => {
    if (text === undefined && entry.dir === 'in' && entry.text.includes('"task.event"') && entry.text.includes('"output"'))
      text = entry.text;
  });
  try {
    await tap.stream!(3);
  } finally {
    await tap.close();
  }
  if (text === undefined) throw new Error('no output event was seen in a tap.test.stream task');
  const template = JSON.parse(text) as Record<string, unknown>;
  // The floor numbers its events with a top-level index instead of the TAP sequence: the same size within a few bytes.
  delete template.sequence;
  return { template, bytes: Buffer.byteLength(text) };
}

export async function streaming(budget: Budget, selected: (id: string) => boolean, log: (line: string) => void): Promise<Row[]> {
  const rows: Row[] = [];
  const count = budget.streamEvents;
  const reps = Math.min(budget.reps, 3);
  let captured: { template: Record<string, unknown>; bytes: number } | undefined;
  let captureError: string | undefined;
  for (const kind of Object.keys(MAKERS) as TransportKind[]) {
    const id = `streaming.${kind}`;
    if (!selected(id)) continue;
    log(`streaming over ${kind}`);
    const base = {
      id,
      scenario: SCENARIO,
      title: `${kind}, one task, ${count.toLocaleString('en-US')} output events`,
      unit: 'events/s',
      better: 'higher' as const,
      method: `events per second from submit to result; one warm-up stream of ${Math.max(1, Math.floor(count / 10))} events, then ${reps} repetitions alternating TAP and the floor`,
    };
    if (!captured && !captureError) {
      try {
        captured = await captureEvent();
      } catch (err) {
        captureError = oneLine(err);
      }
    }
    if (!captured) {
      rows.push(notRun(base, `could not capture a TAP output event: ${captureError}`));
      continue;
    }
    const runs = { tap: [] as number[], bare: [] as number[] };
    const failed: { tap?: string; bare?: string } = {};
    let tap: System | undefined;
    let bare: (System & { requester: { template: Record<string, unknown> } }) | undefined;
    try {
      tap = await MAKERS[kind].tap().catch((err) => void (failed.tap = oneLine(err)));
      bare = await MAKERS[kind].bare().catch((err) => void (failed.bare = oneLine(err)));
      if (bare) bare.requester.template = captured.template;
      const contenders = [
        ['tap', tap],
        ['bare', bare],
      ] as const;
      for (const [name, s] of contenders) {
        if (!s) continue;
        await s.stream!(Math.max(1, Math.floor(count / 10))).catch((err) => void (failed[name] = oneLine(err)));
      }
      for (let rep = 0; rep < reps; rep++) {
        for (const [name, s] of rep % 2 === 0 ? contenders : [...contenders].reverse()) {
          if (!s || failed[name]) continue;
          try {
            const t0 = performance.now();
            const n = await s.stream!(count);
            const elapsed = performance.now() - t0;
            if (n !== count) throw new Error(`received ${n} of ${count} events`);
            runs[name].push((n / elapsed) * 1000);
          } catch (err) {
            failed[name] = oneLine(err);
          }
        }
        log(`  repetition ${rep + 1}/${reps}: tap ${Math.round(runs.tap.at(-1) ?? NaN)}/s, floor ${Math.round(runs.bare.at(-1) ?? NaN)}/s`);
      }
    } finally {
      await tap?.close().catch(() => {});
      await bare?.close().catch(() => {});
    }
    if (failed.tap || runs.tap.length === 0) {
      rows.push(notRun(base, `TAP streaming over ${kind} failed: ${failed.tap ?? 'no figure'}`, kind === 'stdio' ? [STREAM_TARGET] : []));
      continue;
    }
    const tapFigure = { name: 'TAP (reference client + reference agent)', value: spread(runs.tap) };
    const floorName = `bare NDJSON stream of the same events (floor)`;
    const baseline =
      failed.bare || runs.bare.length === 0
        ? missingBaseline('bare', floorName, failed.bare ?? 'no figure')
        : compare(tapFigure, 'bare', { name: floorName, value: spread(runs.bare) });
    const targets =
      kind !== 'stdio'
        ? []
        : baseline.ratio === null
          ? [{ text: STREAM_TARGET, measured: 'floor not measured', met: null }]
          : [
              {
                text: STREAM_TARGET,
                measured: `${(baseline.ratio * 100).toFixed(0)} % of the floor (${ratioRange(tapFigure.value, baseline.value)})`,
                met: baseline.ratio >= 0.5,
              },
            ];
    rows.push({ ...base, tap: tapFigure, baselines: [baseline], targets, details: { event_bytes: captured.bytes } });
  }
  return rows;
}
