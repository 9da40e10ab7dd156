/**
 * The journal's answers to a task.request: BUSY when the principal's live journal bytes are
 * at their bound, INTERNAL_ERROR (retryable) when the task's record could not be made durable
 * (spec: tasks#journal).
 */
import { errorPayload, type ErrorPayload } from '../core/index.ts';
import { JournalWriteError, type JournalRecord } from './journal.ts';
import type { Runtime } from './runtime.ts';
import type { Task } from './tasks.ts';

/**
 * BUSY when `principal` holds maxPrincipalBytes of live journal; a compaction runs first, so
 * only live records count (spec: tasks#journal).
 */
export function journalProblem(rt: Runtime, principal: string): ErrorPayload | null {
  const journal = rt.journal;
  if (!journal) return null;
  const max = journal.limits.maxPrincipalBytes;
  if (journal.bytesOf(principal) < max) return null;
  journal.compact();
  const held = journal.bytesOf(principal);
  if (held < max) return null;
  return errorPayload('BUSY', `your tasks hold ${held} bytes of this agent's journal, at the limit of ${max}; retry once some have ended`, {
    scope: 'journal',
    limit: max,
  });
}

/** Writes a record; when the disk refuses it, the refusal to send instead of acknowledging (spec: tasks#journal). */
export function persistOrRefuse(rt: Runtime, record: JournalRecord): ErrorPayload | null {
  try {
    rt.persist(record);
    return null;
  } catch (err) {
    if (!(err instanceof JournalWriteError)) throw err;
    rt.log('error', err.message);
    return errorPayload(
      'INTERNAL_ERROR',
      `the task could not be written to the journal (${err.code ?? 'write failed'}); it was not accepted, retry later`,
      { durable: false },
      { retryable: true, fatal: false },
    );
  }
}

/** The trace, carried metadata and delegation path of a task, as its journal record keeps them (spec: mesh#trace, envelope#trace-context). */
export function journaledTrace(t: Pick<Task, 'trace' | 'carried' | 'delegation'>): {
  trace?: { trace_id: string; span_id?: string };
  carried?: Record<string, unknown>;
  delegation?: string[];
} {
  return {
    ...(t.trace ? { trace: t.trace } : {}),
    ...(t.carried ? { carried: t.carried } : {}),
    ...(t.delegation ? { delegation: t.delegation } : {}),
  };
}
