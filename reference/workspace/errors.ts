/** Errors of the workspace library: a stable code, what was wrong, where, and what to do next. */

/** Why a workspace operation failed. */
export type WorkspaceErrorCode =
  | 'NOT_A_WORKSPACE'
  | 'BAD_CONFIG'
  | 'UNSUPPORTED_WORKSPACE'
  | 'CONFLICT'
  | 'INVALID_RECORD'
  | 'TASK_EXISTS'
  | 'UNKNOWN_TASK'
  | 'ARTIFACT_REFUSED'
  | 'BAD_ID'
  | 'INVALID_DECISION'
  | 'STALE_PLAN'
  | 'IO';

/** An error for people: `message` says what was wrong, `path` where, `hint` what to do next. */
export class WorkspaceError extends Error {
  override name = 'WorkspaceError';
  constructor(
    readonly code: WorkspaceErrorCode,
    message: string,
    readonly path?: string,
    readonly hint?: string,
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
  }
}
