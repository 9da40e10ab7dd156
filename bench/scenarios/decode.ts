/**
 * Scenario 3, decode + validate: what the reference does with every inbound frame (decodeFrame:
 * size, UTF-8, JSON, I-JSON, envelope schema; then validateDecoded: the rest of the per-type
 * schema, without the envelope again) against
 * JSON.parse alone on the same text, and against JSON.parse plus Ajv (the same per-type schema,
 * Ajv2020 strict) alone. The messages are real frames of an echo and a stream task.
 */
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { decodeFrame, SCHEMA_BASE, validateDecoded } from '../../dist/reference/core/index.js';
import { SCHEMA_BUNDLE } from '../../dist/reference/core/schema-bundle.js';
import type { InboundFrame } from '../../dist/reference/transports/index.js';
import type { Budget } from '../lib/options.ts';
import { perCallNs } from '../lib/measure.ts';
import { compare, notRun, type Figure, type Row } from '../lib/report.ts';
import { spread } from '../lib/stats.ts';
import { tapMemory } from '../lib/systems.ts';
import { oneLine } from './roundtrip.ts';

const ID = 'decode.per-message';
const TYPES = ['task.request', 'task.accepted', 'task.event', 'task.result'];

/** Real frames of each type in TYPES, as the reference client and agent exchanged them. */
async function captureFrames(): Promise<string[]> {
  const seen = new Map<string, string>();
  const tap = await tapMemory(16, (entry) => {
    const type = /"type":"([a-z.]+)"/.exec(entry.text)?.[1];
    if (type && TYPES.includes(type) && !seen.has(type)) seen.set(type, entry.text);
  });
  try {
    await tap.call(7);
    await tap.stream!(2);
  } finally {
    await tap.close();
  }
  const missing = TYPES.filter((t) => !seen.has(t));
  if (missing.length > 0) throw new Error(`no ${missing.join(', ')} frame was seen`);
  return TYPES.map((t) => seen.get(t)!);
}

function ajvValidators(types: string[]): ValidateFunction[] {
  const ajv = new Ajv2020({ strict: true, keywords: ['since'], allErrors: true, discriminator: true });
  addFormats.default(ajv);
  for (const schema of SCHEMA_BUNDLE) ajv.addSchema(schema);
  return types.map((t) => {
    const fn = ajv.getSchema(`${SCHEMA_BASE}${t}.schema.json`) as ValidateFunction | undefined;
    if (!fn) throw new Error(`no schema for ${t}`);
    return fn;
  });
}

/** How many messages a system decodes in one turn of a repetition: milliseconds, so the turns share the machine's state. */
const PAIR_BATCH = 2000;

/**
 * One repetition: the systems take turns, PAIR_BATCH calls each, in an order reversed every turn,
 * until each made `calls` or `ms` ran out; the ns per call of each. Run one after another for
 * seconds each, the systems met different states of a shared machine (other processes, the CPU's
 * clock), and a ratio of two such runs ranged over 1.1–2.8× within one bench run.
 */
function pairedRepetition(ops: ReadonlyArray<{ id: string; op: (i: number) => unknown }>, calls: number, ms: number): Map<string, number> {
  const spent = new Map<string, number>(ops.map((o) => [o.id, 0]));
  const stop = performance.now() + ms;
  let done = 0;
  for (let turn = 0; done < calls && performance.now() < stop; turn++) {
    const n = Math.min(PAIR_BATCH, calls - done);
    for (const o of turn % 2 === 0 ? ops : [...ops].reverse()) spent.set(o.id, spent.get(o.id)! + perCallNs(o.op, n, Infinity).ns * n);
    done += n;
  }
  return new Map([...spent].map(([id, total]) => [id, total / done]));
}

/** The lowest and highest ratio of two systems' figures measured in the same repetitions. */
function pairedRange(tap: readonly number[], baseline: readonly number[]): string {
  const ratios = tap.map((v, i) => v / baseline[i]!);
  return `${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)}×`;
}

export async function decode(budget: Budget, _selected: (id: string) => boolean, log: (line: string) => void): Promise<Row[]> {
  log('decode + validate');
  const base = {
    id: ID,
    scenario: '3. Decode + validate',
    title: 'per inbound message (task.request, task.accepted, task.event, task.result in turn)',
    unit: 'ns',
    better: 'lower' as const,
    method: `time per message over up to ${budget.decodeCalls.toLocaleString('en-US')} messages per repetition (at most ${budget.repMs / 1000} s a system), the systems taking turns every ${PAIR_BATCH.toLocaleString('en-US')} messages, so that each repetition's figures share the machine's state; one warm-up, ${budget.reps} repetitions`,
  };
  const target = 'Decode + validate within 1.5× of JSON.parse alone';
  let texts: string[];
  try {
    texts = await captureFrames();
  } catch (err) {
    return [notRun(base, `could not capture frames: ${oneLine(err)}`, [target])];
  }
  const encoder = new TextEncoder();
  const frames: InboundFrame[] = texts.map((t) => {
    const bytes = encoder.encode(t);
    return { bytes, oversized: false, byteLength: bytes.byteLength };
  });
  const validators = ajvValidators(TYPES);
  const decoder = new TextDecoder('utf-8', { fatal: true });
  const k = texts.length;
  const ops: Array<{ id: string; name: string; op: (i: number) => unknown }> = [
    {
      id: 'tap',
      name: 'TAP decodeFrame + validateDecoded',
      op: (i) => {
        const r = decodeFrame(frames[i % k]!, { maxMessageBytes: 1048576 });
        if (!r.ok) throw new Error(`a captured frame was refused: ${r.error.message}`);
        if (validateDecoded(r.message) !== null) throw new Error('a captured frame failed validation');
        return r;
      },
    },
    { id: 'json', name: 'JSON.parse alone (same text)', op: (i) => JSON.parse(texts[i % k]!) },
    {
      id: 'ajv',
      name: 'JSON.parse + Ajv2020 per-type schema alone',
      op: (i) => {
        const value = JSON.parse(texts[i % k]!);
        if (!validators[i % k]!(value)) throw new Error('Ajv refused a captured frame');
        return value;
      },
    },
    {
      id: 'utf8-json',
      name: 'UTF-8 decode + JSON.parse (from the same bytes)',
      op: (i) => JSON.parse(decoder.decode(frames[i % k]!.bytes)),
    },
  ];
  const runs = new Map<string, number[]>(ops.map((o) => [o.id, []]));
  for (const o of ops) perCallNs(o.op, Math.max(1000, Math.floor(budget.decodeCalls / 4)), budget.repMs);
  for (let rep = 0; rep < budget.reps; rep++) {
    const ns = pairedRepetition(ops, budget.decodeCalls, budget.repMs * ops.length);
    for (const o of ops) runs.get(o.id)!.push(ns.get(o.id)!);
    log(`  repetition ${rep + 1}/${budget.reps}: ${ops.map((o) => `${o.id} ${Math.round(runs.get(o.id)!.at(-1)!)} ns`).join(', ')}`);
  }
  const figure = (id: string): Figure => ({ name: ops.find((o) => o.id === id)!.name, value: spread(runs.get(id)!) });
  const tap = figure('tap');
  const baselines = ['json', 'ajv', 'utf8-json'].map((id) => compare(tap, id, figure(id)));
  const json = baselines[0]!;
  const sizes = texts.map((t) => Buffer.byteLength(t));
  return [
    {
      ...base,
      tap,
      baselines,
      targets: [
        {
          text: target,
          measured: `${json.ratio!.toFixed(2)}× JSON.parse (${pairedRange(runs.get('tap')!, runs.get('json')!)} by repetition)`,
          met: json.ratio! <= 1.5,
        },
      ],
      details: { message_bytes: Object.fromEntries(TYPES.map((t, i) => [t, sizes[i]])) },
    },
  ];
}
