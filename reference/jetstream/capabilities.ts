/**
 * The conformance capabilities that a durable agent serves on its queues, so that tap-conform's
 * nats-durable profile can drive them from outside (spec: conformance#test-capabilities,
 * bindings-nats#task-queue): echo, stream, sleep, fail and counter, with the inputs the
 * conformance chapter gives them.
 */
import { anyErrorPayload, errorEntry, TapError } from '../core/errors.ts';
import { CapabilityError } from '../agent/handler.ts';
import { speaks11 } from '../workspace/capability-failure.ts';
import { startDurableRunner, type DurableRunner, type DurableRunnerOptions, type DurableWork } from './runner.ts';

/** A phase handler of the durable runner. */
export type DurableHandler = (work: DurableWork) => Promise<unknown>;

const input = <T>(work: DurableWork): T => work.record.context.current_input as T;

function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
  });
}

/** The longest hold_ms of tap.test.counter (spec: conformance#test-capabilities, TAP-CONF-121). */
export const MAX_HOLD_MS = 600_000;

/** The hold_ms of tap.test.counter's input: 0 when absent; INVALID_MESSAGE unless an integer in [0, MAX_HOLD_MS]. */
function holdOf(value: unknown): number {
  if (value === undefined) return 0;
  if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 && value <= MAX_HOLD_MS) return value;
  throw new TapError(
    anyErrorPayload(
      'INVALID_MESSAGE',
      `the hold_ms of tap.test.counter is ${String(JSON.stringify(value)).slice(0, 64)}: give an integer from 0 to ${MAX_HOLD_MS}, or leave it out`,
    ),
  );
}

/** The durable handlers of the conformance capabilities; counts of tap.test.counter live in `counts`. */
export function durableConformanceHandlers(counts: Map<string, number> = new Map()): Record<string, DurableHandler> {
  return {
    'tap.test.echo': async (work) => input(work),
    'tap.test.stream': async (work) => {
      const { count, interval_ms, chunk } = input<{ count: number; interval_ms?: number; chunk?: unknown }>(work);
      for (let index = 0; index < count; index++) {
        if (index > 0 && interval_ms) await pause(interval_ms, work.signal);
        await work.emit(chunk === undefined ? { index } : { index, chunk });
      }
      return { count };
    },
    'tap.test.sleep': async (work) => {
      const { ms } = input<{ ms: number }>(work);
      await pause(ms, work.signal);
      return { slept_ms: ms };
    },
    'tap.test.fail': async (work) => {
      const { code, retryable, message } = input<{ code: string; retryable?: boolean; message?: string }>(work);
      // The capability's own failure, carried by the record's version (spec: bindings-nats#durable-1-1).
      if (code === 'CAPABILITY_FAILED') throw new CapabilityError(message ?? 'failing with CAPABILITY_FAILED as asked', { retryable });
      throw new TapError(
        anyErrorPayload(code, message ?? errorEntry(code)?.meaning ?? `failing with ${code} as asked`, undefined, { retryable }),
      );
    },
    // The increment is the task's one effect, made through its effects record: a redelivery gets the count
    // its first delivery made (TAP-NATS-025). With hold_ms (a record of 1.1) it then keeps working (TAP-CONF-121).
    'tap.test.counter': async (work) => {
      const { key, hold_ms } = input<{ key: string; hold_ms?: unknown }>(work);
      const hold = speaks11(work.record) ? holdOf(hold_ms) : 0;
      const count = await work.effect('increment', () => {
        const next = (counts.get(key) ?? 0) + 1;
        counts.set(key, next);
        return next;
      });
      if (hold > 0) await pause(hold, work.signal);
      return { key, count };
    },
  };
}

/** Options of `serveDurableConformance`: the runner options every capability's runner shares. */
export type DurableConformanceOptions = Omit<DurableRunnerOptions, 'capability' | 'handler'>;

/**
 * Serves the conformance capabilities on their durable queues, one runner each, so that
 * tap-conform's nats-durable profile can certify the agent (spec: bindings-nats#certification).
 */
export async function serveDurableConformance(o: DurableConformanceOptions): Promise<DurableRunner[]> {
  const runners: DurableRunner[] = [];
  for (const [capability, handler] of Object.entries(durableConformanceHandlers())) {
    runners.push(await startDurableRunner({ ...o, capability, handler }));
  }
  return runners;
}
