/**
 * What a phase handler of a workspace agent works with: its context, the outcome it returns, and
 * how a phase run is set up and ends (spec: bindings-workspace#leases, #transitions,
 * #approval-and-cancel). phase.ts runs them.
 */
import type { Plan, PlanDecision } from './approval.ts';
import type { Claim } from './claim.ts';
import type { HistoryEntry, TaskRecord } from './record.ts';
import type { TransitionOutcome } from './transition.ts';
import type { Workspace } from './workspace.ts';

/** What a phase handler gets. */
export interface PhaseContext {
  readonly agentId: string;
  readonly taskId: string;
  /** The claim's epoch: the fencing token of this run of the phase. */
  readonly epoch: number;
  readonly phase: string;
  /** `context.current_input` of the record. */
  readonly input: unknown;
  /** The record as claimed (read-only; the claimed file is never modified). */
  readonly record: Readonly<TaskRecord>;
  /** How many earlier claims of this phase ended without finishing it. */
  readonly attempts: number;
  /** The checkpoint the last attempt left, or null. */
  readonly checkpoint: Record<string, unknown> | null;
  /** Aborted when the claim is lost, cancelled, timed out, or the agent shuts down. */
  readonly signal: AbortSignal;
  /** The pair every side effect outside the workspace should carry (spec: bindings-workspace#claiming). */
  readonly fence: { task_id: string; epoch: number };
  /** Saves a checkpoint in the claim's sidecar; a later attempt starts from it. */
  saveCheckpoint(data: Record<string, unknown>): Promise<void>;
  /**
   * Writes an artifact under `artifacts/<task_id>/<epoch>/<name>` (fenced by the epoch, so a stale
   * claim never overwrites a newer claim's files) and lists it in this phase's history entry.
   */
  writeArtifact(name: string, data: string | Uint8Array): Promise<string>;
  /** Reads an artifact by its path relative to `artifacts/`, refusing paths that leave it. */
  readArtifact(path: string): Promise<Buffer>;
  /** The task's whole history, compacted entries included. */
  history(): Promise<HistoryEntry[]>;
  /**
   * Looks for the cancel sidecar now (the runner also looks at every lease renewal); when it is
   * there, aborts `signal` and resolves true. Call it before each step (spec: bindings-workspace#approval-and-cancel).
   */
  isCancelled(): Promise<boolean>;
  /** The plan this claim was decided on, when the record was claimed from awaiting/ after a decision; else null. */
  readonly plan: Plan | null;
  /** The requester's decision on `plan` (approved or needs_revision; a rejection never reaches a handler); else null. */
  readonly decision: PlanDecision | null;
  /** `plan` when it was approved: run its steps as approved, checking `isCancelled` before each (spec: plans#execution); else null. */
  readonly approvedPlan: Plan | null;
  /**
   * Ends this run waiting for approval: `return ctx.submitPlan(plan)`. The plan is checked at once
   * (a TapError INVALID_MESSAGE when it is invalid, reuses a plan_id, or after needs_revision does
   * not revise `plan` with `revision_of` and `feedback`); the runner then writes
   * `awaiting/<task_id>.plan.json` and moves the record to `awaiting/` as `awaiting_approval`
   * (spec: bindings-workspace#approval-and-cancel, plans#decisions). Make plan ids unique per
   * claim (put `epoch` in them): the plan file is not fenced, so a claimant that lost its claim
   * at the last instant may still write one, and a different plan_id is what makes the
   * requester's decision on the current plan stale instead of approving the late content.
   */
  submitPlan(plan: Plan): PlanSubmitted;
}

/** The outcome `ctx.submitPlan` returns, for the handler to return: the run ends with the plan, not an output. */
export interface PlanSubmitted extends PhaseOutcome {
  output: null;
  readonly submitted_plan: Plan;
}

/** A plan decided on, given to the run of a record claimed from awaiting/. */
export interface DecidedPlan {
  plan: Plan;
  decision: PlanDecision;
}

/** What a handler returns when its phase is done. */
export interface PhaseOutcome {
  output: unknown;
  /** More artifacts to list (paths relative to `artifacts/`; they must exist and stay inside it). */
  artifacts?: string[];
  /** The next phase, or null to complete the task; default: the phase after this one in `metadata.pipeline`, else null. */
  next_phase?: string | null;
  /** The input of the next phase (default: `output`). */
  next_input?: unknown;
  /** The agent that must take the next phase (default: "" — any agent serving it). */
  target_agent?: string;
}

/** A phase handler: does the work of one phase, or submits a plan for it. Throw a TapError to fail with its code. */
export type PhaseHandler = (ctx: PhaseContext) => Promise<PhaseOutcome> | PhaseOutcome;

/** Why a phase was interrupted. */
export type AbortKind = 'lost' | 'cancel' | 'timeout' | 'shutdown';

/** How a phase run ended, for the runner's events. */
export interface PhaseResult {
  taskId: string;
  epoch: number;
  phase: string;
  /** The transition's outcome, or null when the claim was lost before one was tried. */
  transition: TransitionOutcome | null;
  status?: string;
  /** The plan submitted, when the run parked the record in awaiting/. */
  planId?: string;
  error?: { code: string; message: string };
}

/** Settings of one phase run. */
export interface PhaseRunOptions {
  ws: Workspace;
  agentId: string;
  claim: Claim;
  record: TaskRecord;
  handler: PhaseHandler;
  /** The plan and decision, when the record was claimed from awaiting/. */
  approval?: DecidedPlan | null;
  /** Resolves when the agent shuts down. */
  shutdown: AbortSignal;
  /** How long an interrupted handler may take to return before its result stops mattering. */
  graceMs: number;
  log: (level: 'debug' | 'info' | 'warn' | 'error', message: string) => void;
}
