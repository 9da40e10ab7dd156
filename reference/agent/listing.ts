/**
 * task.list, TAP 1.1: a page of the session's principal's tasks in the order they were accepted,
 * filtered by state and capability, after an opaque cursor that carries its place and is sealed
 * to the principal and the filter, so that the agent keeps nothing between pages (spec:
 * tasks#listing).
 */
import type { MessageOf, PayloadOf } from '../../schemas/src/index.ts';
import { base64urlDecode, base64urlEncode, errorPayload, type ErrorPayload } from '../core/index.ts';
import { iso } from './outbound.ts';
import type { Runtime } from './runtime.ts';
import type { Task } from './tasks.ts';

/** The tasks of a page when the task.list gives no limit (spec: tasks#listing). */
export const DEFAULT_PAGE_TASKS = 50;

/** Where a page starts: after the task of this acceptance time and task id. */
type Place = [createdAt: number, taskId: string];

/** The filter a cursor is sealed to: the members of task.list besides cursor and limit. */
type Filter = Pick<PayloadOf<'task.list'>, 'state' | 'capability'>;

/** The key each runtime seals its cursors with, drawn on first use: a cursor of another run does not open. */
const keys = new WeakMap<Runtime, Uint8Array>();

function keyOf(rt: Runtime): Uint8Array {
  let key = keys.get(rt);
  if (!key) keys.set(rt, (key = rt.random(32)));
  return key;
}

const encoder = new TextEncoder();

function seal(rt: Runtime, principal: string, filter: Filter, body: string): string {
  const data = encoder.encode(JSON.stringify([principal, filter.state ?? null, filter.capability ?? null, body]));
  return base64urlEncode(rt.hmac(keyOf(rt), data).subarray(0, 16));
}

/** The cursor of the page after `last`, for this principal and filter. */
export function cursorAfter(rt: Runtime, principal: string, filter: Filter, last: Task): string {
  const body = base64urlEncode(encoder.encode(JSON.stringify([last.createdAt, last.taskId] satisfies Place)));
  return `${body}.${seal(rt, principal, filter, body)}`;
}

/** The place a cursor holds, or null for one this runtime did not give this principal for this filter. */
export function placeOf(rt: Runtime, principal: string, filter: Filter, cursor: string): Place | null {
  const [body, tag, extra] = cursor.split('.');
  if (body === undefined || tag === undefined || extra !== undefined || seal(rt, principal, filter, body) !== tag) return null;
  const bytes = base64urlDecode(body);
  try {
    const place = bytes && (JSON.parse(new TextDecoder().decode(bytes)) as unknown);
    return Array.isArray(place) && typeof place[0] === 'number' && typeof place[1] === 'string' ? (place as Place) : null;
  } catch {
    return null;
  }
}

/** Acceptance order: the time a task was accepted, then its id (both fixed for the task's life). */
function before(a: Place, b: Place): boolean {
  return a[0] < b[0] || (a[0] === b[0] && a[1] < b[1]);
}

/**
 * The page a task.list asks for, or the error that refuses it: INVALID_CURSOR for a cursor this
 * agent did not give the principal for this filter. A page that would not fit the session's
 * max_message_bytes (`fits`) holds fewer tasks, down to one, and its cursor goes on from the last
 * (spec: tasks#listing, authorization#task-visibility, limits#message-size).
 */
export function listTasks(
  rt: Runtime,
  principal: string,
  p: MessageOf<'task.list'>['payload'],
  fits: (page: PayloadOf<'task.page'>) => boolean = () => true,
): PayloadOf<'task.page'> | ErrorPayload {
  const filter: Filter = {};
  if (p.state !== undefined) filter.state = p.state;
  if (p.capability !== undefined) filter.capability = p.capability;
  let after: Place | null = null;
  if (p.cursor !== undefined) {
    after = placeOf(rt, principal, filter, p.cursor);
    if (!after) {
      return errorPayload(
        'INVALID_CURSOR',
        'the cursor was not given by this agent to this principal for this filter, or no longer opens; list again without a cursor',
      );
    }
  }
  const limit = p.limit ?? DEFAULT_PAGE_TASKS;
  const matching: Task[] = [];
  for (const t of rt.tasks.all()) {
    if (t.principal !== principal) continue;
    if (filter.state !== undefined && t.state !== filter.state) continue;
    if (filter.capability !== undefined && t.capability !== filter.capability) continue;
    if (after && !before(after, [t.createdAt, t.taskId])) continue;
    matching.push(t);
  }
  matching.sort((a, b) => (before([a.createdAt, a.taskId], [b.createdAt, b.taskId]) ? -1 : 1));
  const pageOf = (n: number): PayloadOf<'task.page'> => {
    const tasks = matching.slice(0, n);
    const page: PayloadOf<'task.page'> = {
      tasks: tasks.map((t) => ({
        task_id: t.taskId,
        capability: t.capability,
        state: t.state,
        created_at: iso(t.createdAt),
        updated_at: iso(t.updatedAt),
        last_sequence: Math.max(1, t.lastSequence),
      })),
    };
    if (matching.length > n) page.next_cursor = cursorAfter(rt, principal, filter, tasks[tasks.length - 1]!);
    return page;
  };
  let n = Math.min(limit, matching.length);
  let page = pageOf(n);
  while (n > 1 && !fits(page)) page = pageOf((n = Math.ceil(n / 2)));
  return page;
}
