/**
 * TAP 1.1 delegation paths: the agent ids a task.request carries of the agents that delegated it,
 * the check an agent makes of them, and the path of a task it delegates in turn (spec: mesh#delegation).
 */
import { errorPayload, type ErrorPayload } from './errors.ts';

/** The longest delegation path an agent accepts when its card states no limits.max_delegation_depth (spec: mesh#delegation). */
export const DEFAULT_DELEGATION_DEPTH = 8;

/**
 * The refusal of a request's delegation path by agent `agentId`, whose limit is `limit`: the path
 * lists the agent (the task came back) or is longer than the limit; null when it may be accepted
 * (spec: mesh#delegation).
 */
export function delegationProblem(agentId: string, limit: number, path: readonly string[] | undefined): ErrorPayload | null {
  if (!path?.length) return null;
  const shown = path.join(' → ');
  if (path.includes(agentId)) {
    return errorPayload(
      'DELEGATION_LOOP',
      `the task came back to ${agentId}, which is already on its delegation path ${shown}; the delegating capability must not hand the task back along its own path`,
      { delegation: [...path] },
    );
  }
  if (path.length > limit) {
    return errorPayload(
      'DELEGATION_LOOP',
      `the delegation path ${shown} holds ${path.length} agents, more than the ${limit} ${agentId} accepts; a chain this deep is taken for a loop`,
      { delegation: [...path], limit },
    );
  }
  return null;
}

/** The delegation of a task that agent `agentId` submits as part of its own task, whose path is `path` (spec: mesh#delegation). */
export function delegationOf(path: readonly string[] | undefined, agentId: string): string[] {
  return [...(path ?? []), agentId];
}
