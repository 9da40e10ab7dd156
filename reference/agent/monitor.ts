/**
 * What the agent counts for its operators, and its audit trail: tasks accepted and finished by
 * outcome, their durations, the requests it refused by code (BUSY among them), and one audit
 * record per finished task. Read as Prometheus families at scrape time (serve: /metrics).
 */
import { PairMap } from '../core/pair-map.ts';
import { TASK_TABLE } from '../core/states.ts';
import type { AuditEntry, AuditTrail } from '../ops/audit.ts';
import { Counter, Histogram, type CounterValue, type Family, type HistogramCounts } from '../ops/prometheus.ts';
import { iso } from './outbound.ts';
import type { Task } from './tasks.ts';

/** The agent's figures at scrape time, which the monitor does not count itself. */
export interface AgentFigures {
  sessions: number;
  orphanedSessions: number;
  connections: number;
  /** Tasks the agent keeps, by state. */
  tasksByState: ReadonlyMap<string, number>;
  draining: boolean;
}

/** The audit entry of a session task that has ended. */
export function auditEntryOf(agentId: string, task: Task, now: number, requester?: string): AuditEntry {
  const context = task.carried as { traceparent?: unknown } | undefined;
  return {
    via: 'session',
    agent: agentId,
    principal: task.principal,
    ...(requester !== undefined ? { requester } : {}),
    task_id: task.taskId,
    capability: task.capability,
    ...(task.authorization ? { grant: task.authorization } : {}),
    ...(task.idempotencyKey !== undefined ? { idempotency_key: task.idempotencyKey } : {}),
    ...(task.trace ? { trace_id: task.trace.trace_id } : {}),
    ...(typeof context?.traceparent === 'string' ? { traceparent: context.traceparent } : {}),
    attempt: task.attempt,
    outcome: task.result?.status ?? (task.state as AuditEntry['outcome']),
    ...(task.result?.error ? { error_code: String(task.result.error.code) } : {}),
    accepted_at: iso(task.createdAt),
    finished_at: iso(now),
  };
}

/** The counters of one agent, and its audit trail when it keeps one. */
/** The families counted per task or refusal, which an agent built with `metrics: false` leaves out. */
const COUNTED_PER_TASK = new Set([
  'tap_tasks_accepted_total',
  'tap_tasks_finished_total',
  'tap_requests_refused_total',
  'tap_task_duration_seconds',
]);

export class TaskMonitor {
  readonly accepted = new Counter();
  readonly finished = new Counter();
  readonly refused = new Counter();
  readonly durations = new Histogram();
  private readonly startedAt: number;
  /** The series each task counts in, by capability (and outcome), kept so that a task builds no labels. */
  private readonly acceptedOf = new Map<string, CounterValue>();
  private readonly finishedOf = new PairMap<{ count: CounterValue; duration: HistogramCounts }>();

  /**
   * `counting` false (createAgent's `metrics: false`) counts nothing per task or refusal: the
   * counters and the histogram are left out of the families, the gauges read at scrape time stay.
   */
  constructor(
    readonly agentId: string,
    now: number,
    readonly audit?: AuditTrail,
    readonly counting = true,
  ) {
    this.startedAt = now;
    // BUSY is written from the start, at 0, so that a rate over it has a series before the first refusal.
    this.refused.inc({ code: 'BUSY' }, 0);
  }

  /** A task.request was taken. */
  taskAccepted(task: Task): void {
    if (!this.counting) return;
    let series = this.acceptedOf.get(task.capability);
    if (!series) this.acceptedOf.set(task.capability, (series = this.accepted.seriesOf({ capability: task.capability })));
    series.value++;
  }

  /** A task reached its one result: counted, timed and audited. */
  taskFinished(task: Task, now: number, requester?: string): void {
    if (this.counting) {
      const outcome = task.result?.status ?? task.state;
      let series = this.finishedOf.get(task.capability, outcome);
      if (!series) {
        const labels = { capability: task.capability, outcome };
        series = { count: this.finished.seriesOf(labels), duration: this.durations.seriesOf(labels) };
        this.finishedOf.set(task.capability, outcome, series);
      }
      series.count.value++;
      this.durations.observeIn(series.duration, Math.max(0, now - task.createdAt) / 1000);
    }
    this.audit?.append(auditEntryOf(this.agentId, task, now, requester));
  }

  /** A request was answered with an error (spec: errors). */
  requestRefused(code: string): void {
    if (this.counting) this.refused.inc({ code });
  }

  /** The agent's families: the figures given, and what it counted. */
  families(figures: AgentFigures): Family[] {
    const families: Family[] = [
      {
        name: 'tap_agent_info',
        help: 'The agent this process serves (always 1).',
        type: 'gauge',
        samples: [{ labels: { agent_id: this.agentId }, value: 1 }],
      },
      {
        name: 'tap_agent_start_time_seconds',
        help: 'When the agent was built, in seconds since the epoch.',
        type: 'gauge',
        samples: [{ value: this.startedAt / 1000 }],
      },
      {
        name: 'tap_agent_draining',
        help: '1 while a shutdown is under way, else 0.',
        type: 'gauge',
        samples: [{ value: figures.draining ? 1 : 0 }],
      },
      { name: 'tap_connections_open', help: 'Transport connections open now.', type: 'gauge', samples: [{ value: figures.connections }] },
      {
        name: 'tap_sessions_open',
        help: 'Sessions kept now, resumable orphans included.',
        type: 'gauge',
        samples: [{ value: figures.sessions }],
      },
      {
        name: 'tap_sessions_orphaned',
        help: 'Sessions that lost their transport and wait to be resumed.',
        type: 'gauge',
        samples: [{ value: figures.orphanedSessions }],
      },
      {
        name: 'tap_tasks',
        help: 'Tasks the agent keeps now, by state (terminal ones until their retention ends).',
        type: 'gauge',
        samples: TASK_TABLE.states.map((state) => ({ labels: { state }, value: figures.tasksByState.get(state) ?? 0 })),
      },
      { name: 'tap_tasks_accepted_total', help: 'Task requests taken, by capability.', type: 'counter', samples: this.accepted.samples() },
      {
        name: 'tap_tasks_finished_total',
        help: 'Tasks that reached their result, by capability and outcome.',
        type: 'counter',
        samples: this.finished.samples(),
      },
      {
        name: 'tap_requests_refused_total',
        help: 'Requests answered with an error, by error code (BUSY: a concurrency or table limit).',
        type: 'counter',
        samples: this.refused.samples(),
      },
      {
        name: 'tap_task_duration_seconds',
        help: "From a task's acceptance to its result, by capability and outcome.",
        type: 'histogram',
        series: this.durations.snapshot(),
      },
    ];
    if (this.audit)
      families.push({
        name: 'tap_audit_records_total',
        help: 'Records the audit trail holds, rotated files included.',
        type: 'counter',
        samples: [{ value: this.audit.last().seq }],
      });
    // Without counting, the series counted per task say nothing: they are left out, not shown as 0.
    return this.counting ? families : families.filter((f) => !COUNTED_PER_TASK.has(f.name));
  }
}
