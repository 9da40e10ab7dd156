/**
 * ListTasks of the A2A facade: from TAP 1.1's task listing of the agent's session (spec:
 * bridge-a2a#list), or, over a mesh, whose requester has no listing across agents, from the tasks
 * the facade holds (spec: bridge-a2a#mesh).
 */
import type { ListTasksRequest, ListTasksResponse, Task } from '@a2a-js/sdk';
import { TapClient, TapClientError, type TaskPage, type TaskSummary } from '../client/index.ts';
import { type A2aState, listedTaskOf, listFilterOf } from './a2a-mapping.ts';
import type { A2aServerSdk } from './a2a-sdk.ts';
import type { A2aTask } from './a2a-tasks.ts';
import type { MeshTarget } from './mesh-target.ts';

/** The TAP side of the facade: a session with one agent, or a mesh whose live capabilities are the skills (spec: bridge-a2a#mesh). */
export type A2aTarget = TapClient | MeshTarget;

type Errors = A2aServerSdk['errors'];

/** The A2A page of `params`, of the agent's listing or of the tasks `held` over a mesh. */
export async function listTasksOf(
  client: A2aTarget,
  held: ReadonlyMap<string, A2aTask>,
  errors: Errors,
  params: ListTasksRequest,
): Promise<ListTasksResponse> {
  const pageSize = params.pageSize ?? 50;
  if (!Number.isInteger(pageSize) || pageSize < 1 || pageSize > 100)
    throw new errors.RequestMalformedError(`pageSize ${pageSize} is out of range: give 1 to 100 (50 when absent)`);
  const after = params.statusTimestampAfter ? Date.parse(params.statusTimestampAfter) : undefined;
  if (after !== undefined && Number.isNaN(after))
    throw new errors.RequestMalformedError(
      `statusTimestampAfter ${params.statusTimestampAfter} is not an ISO 8601 time, e.g. 2026-12-05T10:00:00Z`,
    );
  return client instanceof TapClient
    ? listOfAgent(client, held, errors, params, pageSize, after)
    : listHeld(held, errors, params, pageSize, after);
}

/**
 * ListTasks from TAP 1.1's task listing (spec: bridge-a2a#list): the tasks of the facade's own
 * principal, in the agent's order, the page token TAP's cursor unchanged.
 */
async function listOfAgent(
  client: TapClient,
  held: ReadonlyMap<string, A2aTask>,
  errors: Errors,
  params: ListTasksRequest,
  pageSize: number,
  after: number | undefined,
): Promise<ListTasksResponse> {
  // An A2A state that one TAP state maps to is TAP's filter; one of several (FAILED, WORKING) is checked here.
  const { keep, ...filter } = listFilterOf(params.status as A2aState);
  const matches = (t: TaskSummary): boolean =>
    (keep === undefined || keep.includes(t.state)) &&
    (after === undefined || Date.parse(t.updated_at) >= after) &&
    (!params.contextId || held.get(t.task_id)?.ref.contextId === params.contextId);
  const found: TaskSummary[] = [];
  let cursor: string | undefined = params.pageToken || undefined;
  let total = 0;
  try {
    // TAP pages until the A2A page is full or the listing ends; each asks for no more than the page still lacks,
    // so that a page filtered here never holds a task past the cursor it hands back.
    do {
      const page: TaskPage = await client.listTasks({ ...filter, limit: pageSize - found.length, ...(cursor ? { cursor } : {}) });
      found.push(...page.tasks.filter(matches));
      cursor = page.nextCursor;
    } while (cursor !== undefined && found.length < pageSize);
    // The total before paging: TAP's listing says none, so the facade counts the matching tasks, a page of 100 at a time.
    for await (const t of client.allTasks({ ...filter, limit: 100 })) if (matches(t)) total++;
  } catch (err) {
    if (!(err instanceof TapClientError)) throw err;
    if (err.code === 'UNKNOWN_MESSAGE_TYPE')
      throw new errors.UnsupportedOperationError(`ListTasks needs TAP 1.1's task listing; ${err.message}`);
    if (err.code === 'INVALID_CURSOR' || err.code === 'INVALID_MESSAGE')
      throw new errors.RequestMalformedError(
        `the agent refused the listing (${err.code}: ${err.message}); give a pageToken of this facade's, with the same filter, or none`,
      );
    throw err;
  }
  // A listed task is the facade's own Task when it still holds it, else one built from the TAP summary.
  const tasks = found.map((t) => held.get(t.task_id)?.snapshot(params.historyLength) ?? listedTaskOf(t));
  return { tasks: tasks.map((t) => withArtifacts(t, params)), nextPageToken: cursor ?? '', pageSize, totalSize: total };
}

/**
 * ListTasks over a mesh (spec: bridge-a2a#mesh): the list is of the tasks this facade holds, in
 * the order it started them, the page token the id of the last task of the page before.
 */
function listHeld(
  held: ReadonlyMap<string, A2aTask>,
  errors: Errors,
  params: ListTasksRequest,
  pageSize: number,
  after: number | undefined,
): ListTasksResponse {
  const all = [...held.values()];
  let start = 0;
  if (params.pageToken) {
    start = all.findIndex((t) => t.ref.id === params.pageToken) + 1;
    if (start === 0)
      throw new errors.RequestMalformedError(
        `pageToken ${params.pageToken} names no task this facade holds (it was forgotten, or is not a token of this facade); list again without one`,
      );
  }
  const matches = (t: A2aTask): boolean =>
    (!params.status || t.state === params.status) &&
    (after === undefined || t.updatedAt >= after) &&
    (!params.contextId || t.ref.contextId === params.contextId);
  const found = all.slice(start).filter(matches);
  const page = found.slice(0, pageSize);
  const nextPageToken = found.length > pageSize ? page[page.length - 1]!.ref.id : '';
  const tasks = page.map((t) => withArtifacts(t.snapshot(params.historyLength), params));
  return { tasks, nextPageToken, pageSize, totalSize: all.filter(matches).length };
}

/** A listed task, with its artifacts only when the request asks for them. */
function withArtifacts(task: Task, params: ListTasksRequest): Task {
  return params.includeArtifacts ? task : { ...task, artifacts: [] };
}
