/**
 * What a durable runner tells its operators: its queue's depth as the server counts it, the
 * deliveries that came again, dead letters, finished tasks by outcome and their durations, as
 * Prometheus families labelled with the capability; and the audit record of each finished task.
 */
import type { JetStreamManager } from '@nats-io/jetstream';
import type { AuditEntry } from '../ops/audit.ts';
import type { Family, Histogram } from '../ops/prometheus.ts';
import type { TaskRecord } from '../workspace/record.ts';
import { traceOfRecord } from './events.ts';
import { errorOf, type Outcome } from './outcome.ts';

export type { AuditSink } from '../ops/audit.ts';

/** A runner's counts, as `DurableRunner.stats` keeps them. */
export interface RunnerCounts {
  completed: number;
  failed: number;
  retried: number;
  deadLetters: number;
  refused: number;
  redelivered: number;
}

/** The audit entry of a durable task that finished on this runner. */
export function durableAuditEntry(
  agentId: string,
  capability: string,
  record: TaskRecord,
  attempts: number,
  outcome: Outcome,
  principal: string | undefined,
): AuditEntry {
  const idem = (record.metadata as { 'x-idempotency'?: { principal?: unknown; key?: unknown } })['x-idempotency'];
  const trace = traceOfRecord(record.metadata);
  const traceparent = record.metadata.traceparent;
  const code = errorOf(outcome, record)?.code;
  return {
    via: 'durable',
    agent: agentId,
    principal: principal ?? (typeof idem?.principal === 'string' ? idem.principal : 'unverified'),
    task_id: record.task_id,
    capability,
    ...(typeof idem?.key === 'string' ? { idempotency_key: idem.key } : {}),
    ...(trace?.trace_id ? { trace_id: trace.trace_id } : {}),
    ...(typeof traceparent === 'string' ? { traceparent } : {}),
    attempt: attempts + 1,
    outcome: outcome.error ? 'failed' : 'completed',
    ...(code !== undefined ? { error_code: code } : {}),
    accepted_at: record.created_at,
    finished_at: new Date().toISOString(),
  };
}

/**
 * The families of one runner. The queue's depth is read from the server at each scrape: messages
 * pending for the consumer, and delivered but not yet acknowledged.
 */
export async function runnerFamilies(
  capability: string,
  counts: RunnerCounts,
  durations: Histogram,
  queue: { jsm: JetStreamManager; stream: string; consumer: string },
): Promise<Family[]> {
  const labels = { capability };
  const info = await queue.jsm.consumers.info(queue.stream, queue.consumer).catch(() => null);
  const families: Family[] = [
    {
      name: 'tap_durable_tasks_finished_total',
      help: 'Durable tasks this runner finished, by capability and outcome.',
      type: 'counter',
      samples: [
        { labels: { capability, outcome: 'completed' }, value: counts.completed },
        { labels: { capability, outcome: 'failed' }, value: counts.failed },
      ],
    },
    {
      name: 'tap_durable_retries_total',
      help: 'Deliveries that failed retryably and were handed back to the server, by capability.',
      type: 'counter',
      samples: [{ labels, value: counts.retried }],
    },
    {
      name: 'tap_durable_redeliveries_total',
      help: 'Deliveries this runner took that the server had delivered before, by capability.',
      type: 'counter',
      samples: [{ labels, value: counts.redelivered }],
    },
    {
      name: 'tap_durable_dead_letters_total',
      help: 'Records moved to the dead-letter stream, by capability and reason (max_deliveries, refused).',
      type: 'counter',
      samples: [
        { labels: { capability, reason: 'max_deliveries' }, value: counts.deadLetters },
        { labels: { capability, reason: 'refused' }, value: counts.refused },
      ],
    },
    {
      name: 'tap_durable_task_duration_seconds',
      help: "From a delivery to its task's finished record, by capability and outcome.",
      type: 'histogram',
      series: durations.snapshot(),
    },
  ];
  if (info)
    families.push(
      {
        name: 'tap_durable_queue_pending',
        help: 'Records waiting in the queue for their first or next delivery, by capability.',
        type: 'gauge',
        samples: [{ labels, value: info.num_pending }],
      },
      {
        name: 'tap_durable_queue_ack_pending',
        help: 'Records delivered and not yet acknowledged (running, or waiting for their lease to end), by capability.',
        type: 'gauge',
        samples: [{ labels, value: info.num_ack_pending }],
      },
    );
  return families;
}
