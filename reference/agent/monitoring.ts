/**
 * The agent's monitoring endpoints' answers: its health (ready, draining, stopped, with sessions,
 * connections, running tasks and the head of its audit trail) and its metrics (the monitor's
 * families and those of whatever runs beside it: durable runners).
 */
import type { HealthReport, MonitoringSource } from '../ops/http.ts';
import { mergeFamilies, renderExposition, type Family } from '../ops/prometheus.ts';
import type { Runtime } from './runtime.ts';

/** More families, collected at scrape time (the durable runners' queues). */
export type MetricsCollector = () => Family[] | Promise<Family[]>;

/** What the endpoints need of the agent besides its runtime. */
export interface MonitoredAgent {
  rt: Runtime;
  connections: () => number;
  /** undefined: serving; 'draining': a shutdown is under way; 'stopped': it has ended. */
  phase: () => 'draining' | 'stopped' | undefined;
  collectors: ReadonlySet<MetricsCollector>;
}

/** The agent's health now. */
export function healthOf(a: MonitoredAgent): HealthReport {
  const { rt } = a;
  const phase = a.phase() ?? (rt.shuttingDown ? 'draining' : undefined);
  let orphaned = 0;
  for (const s of rt.sessions.values()) if (s.orphanedAt !== undefined) orphaned++;
  const report: HealthReport = {
    status: phase ?? 'ready',
    agent_id: rt.agentId,
    sessions: rt.sessions.size,
    orphaned_sessions: orphaned,
    connections: a.connections(),
    running_tasks: rt.tasks.activeCount(),
  };
  const audit = rt.monitor.audit;
  if (audit) report.audit = { file: audit.file, ...audit.last() };
  return report;
}

/** The agent's metrics in the text format. */
export async function metricsOf(a: MonitoredAgent): Promise<string> {
  const { rt } = a;
  const byState = new Map<string, number>();
  for (const t of rt.tasks.all()) byState.set(t.state, (byState.get(t.state) ?? 0) + 1);
  let orphaned = 0;
  for (const s of rt.sessions.values()) if (s.orphanedAt !== undefined) orphaned++;
  const families = rt.monitor.families({
    sessions: rt.sessions.size,
    orphanedSessions: orphaned,
    connections: a.connections(),
    tasksByState: byState,
    draining: a.phase() !== undefined || rt.shuttingDown,
  });
  for (const collect of a.collectors) families.push(...(await collect()));
  return renderExposition(mergeFamilies(families));
}

/** The source the endpoints read. */
export function monitoringSource(a: MonitoredAgent): MonitoringSource {
  return { health: () => healthOf(a), metrics: () => metricsOf(a) };
}
