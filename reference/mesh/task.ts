/**
 * One copy of a mesh submission: a task handle like the client's (accepted, events, messages,
 * result, cancel, status) whose attempts may run on several agents. When its agent is lost or
 * hands it off, the copy moves to another candidate if it may move, with the same idempotency
 * key, a new task id, the next metadata.attempt and a new span (spec: mesh#moving, mesh#trace).
 */
import { Feed } from '../client/feed.ts';
import { FollowedTask } from '../client/followed.ts';
import { quiet } from '../client/errors.ts';
import {
  ClientCode,
  TapClientError,
  type Accepted,
  type PlanDecision,
  type PlanSubmitPayload,
  type ResultPayload,
  type SnapshotPayload,
  type StreamMessage,
  type TapClient,
  type TaskHandle,
} from '../client/index.ts';
import { extended } from '../core/extended.ts';
import { parseTraceparent, type TraceContext } from '../core/trace-context.ts';
import type { TapSpan } from '../telemetry.ts';
import type { MeshEntry } from './registry-view.ts';
import { newSpanId, type Span } from './trace.ts';
import type { CopyHost, CopyOptions, Hop, Picked } from './copy-host.ts';

/** Error codes that say the session, not the agent's judgement, ended the attempt. */
const LOSS_CODES = new Set(['SESSION_LOST', 'CLOSED', 'REQUEST_TIMEOUT', 'RESUME_UNAVAILABLE', 'UNKNOWN_TASK']);

/** A copy of a submission, followed across agents. */
export class MeshTask extends FollowedTask {
  readonly accepted: Promise<Accepted>;
  readonly result: Promise<ResultPayload>;
  /** Every attempt with its agent, span and outcome. */
  readonly hops: Hop[] = [];
  private current?: TaskHandle;
  private resolveAccepted!: (a: Accepted) => void;
  private rejectAccepted!: (e: Error) => void;
  private resolveResult!: (r: ResultPayload) => void;
  private rejectResult!: (e: Error) => void;
  private isAccepted = false;
  private cancelRequested = false;
  private nextAttempt = 1;
  /** The agent the copy is counted in flight on, from its choice to the end of the attempt there. */
  private holding?: Picked;

  constructor(
    private readonly host: CopyHost,
    readonly capability: string,
    readonly input: unknown,
    private readonly options: CopyOptions,
  ) {
    super(new Feed<StreamMessage>());
    this.accepted = quiet(
      new Promise<Accepted>((resolve, reject) => {
        this.resolveAccepted = resolve;
        this.rejectAccepted = reject;
      }),
    );
    this.result = quiet(
      new Promise<ResultPayload>((resolve, reject) => {
        this.resolveResult = resolve;
        this.rejectResult = reject;
      }),
    );
    void this.run();
  }

  /** The idempotency key every attempt carries (TAP-MESH-012). */
  get idempotencyKey(): string {
    return this.options.idempotencyKey;
  }

  /** The trace every attempt carries (TAP-MESH-017). */
  get traceId(): string {
    return this.options.traceId;
  }

  /** The agent of the current attempt. */
  get agentId(): string | undefined {
    return this.hops[this.hops.length - 1]?.agentId;
  }

  protected followed(): TaskHandle | undefined {
    return this.current;
  }

  /** Cancels the current attempt; the copy then moves no more. */
  async cancel(reason?: string): Promise<SnapshotPayload> {
    this.cancelRequested = true;
    await this.accepted;
    return this.current!.cancel(reason);
  }

  async status(): Promise<SnapshotPayload> {
    await this.accepted;
    return this.current!.status();
  }

  async decide(planId: string, decision: PlanDecision): Promise<SnapshotPayload> {
    await this.accepted;
    return this.current!.decide(planId, decision);
  }

  private async run(): Promise<void> {
    this.holding = this.options.first;
    try {
      await this.tryAgents();
    } finally {
      // Whatever ended the copy (before its first attempt, or by a throw), it leaves no count behind.
      this.holding?.release();
    }
  }

  private async tryAgents(): Promise<void> {
    const lost = new Set<string>();
    const refused = new Set<string>();
    let lastError: Error | undefined;
    let picked = this.holding;
    // Agents no session could be opened to: nothing of the copy went there (TAP-MESH-024).
    const unreached: string[] = [];
    let unreachedWaits = 0;
    const startedAt = Date.now();
    while (!this.done) {
      if (this.nextAttempt > this.host.maxAttempts) {
        return this.settle(lastError ?? new TapClientError('CAPABILITY_NOT_SUPPORTED', 'no attempt left'));
      }
      if (!picked) {
        const exclude = new Set([...lost, ...this.host.siblings(), ...refused]);
        picked = await this.host.pick(this.capability, exclude);
        if (!picked && refused.size > 0) {
          // Every agent left was busy: wait a little and offer them another turn.
          await this.host.sleep(50 * 2 ** Math.min(this.nextAttempt, 5));
          refused.clear();
          continue;
        }
        if (!picked && this.hops.length === 0 && unreached.length > 0) {
          // Every agent listed was tried and none answered: a registry view still filling (after a
          // reconnect, say) may list live ones in a moment; wait for one within the bound.
          const waited = Date.now() - startedAt;
          const bound = Math.min(this.host.unreachedWaitMs, this.options.timeoutMs ?? Number.POSITIVE_INFINITY);
          if (waited < bound) {
            await this.host.sleep(Math.min(100 * 2 ** Math.min(unreachedWaits++, 3), bound - waited));
            continue;
          }
          return this.settle(this.noneAnswered(unreached, lastError));
        }
        if (!picked) {
          return this.settle(
            lastError ?? new TapClientError('CAPABILITY_NOT_SUPPORTED', `no live agent in the registry offers ${this.capability}`),
          );
        }
      }
      // Trying agent after agent stops at the copy's deadline (TAP-MESH-024).
      if (unreached.length > 0 && this.options.timeoutMs !== undefined && Date.now() - startedAt >= this.options.timeoutMs) {
        if (this.hops.length === 0) return this.settle(this.noneAnswered(unreached, lastError, this.options.timeoutMs));
        return this.settle(lastError);
      }
      this.holding = picked;
      const { entry: chosen, release } = picked;
      picked = undefined;
      let client: TapClient;
      try {
        client = await this.host.client(chosen);
      } catch (err) {
        release();
        // No session, so nothing was sent: the copy goes to the next candidate whatever its side effects (TAP-MESH-024).
        lost.add(chosen.agent_id);
        unreached.push(chosen.agent_id);
        this.host.unreachable?.(chosen);
        lastError = err as Error;
        continue;
      }
      const first = this.hops[0]?.span;
      const attempt = this.nextAttempt++;
      // Every attempt is a span of its own under the same parent (TAP-MESH-017, TAP-MESH-021).
      const otel = this.host.hopSpan?.({
        capability: this.capability,
        agentId: chosen.agent_id,
        attempt,
        idempotencyKey: this.options.idempotencyKey,
      });
      const span: Span = { trace_id: this.options.traceId, span_id: otel?.spanId ?? newSpanId() };
      const parent = first ? first.parent_span_id : this.options.parentSpanId;
      if (parent !== undefined) span.parent_span_id = parent;
      const metadata = extended<object, object>(span, { attempt, ...hopTraceContext(this.options.traceContext, span) });
      const inner = client.submit(this.capability, this.input, {
        idempotencyKey: this.options.idempotencyKey,
        metadata: metadata as Record<string, unknown>,
        ...(this.options.delegation?.length ? { delegation: this.options.delegation } : {}),
        retry: { attempts: 1 },
        ...(this.options.timeoutMs !== undefined ? { timeoutMs: this.options.timeoutMs } : {}),
        ...(this.options.onPlan ? { onPlan: this.options.onPlan } : {}),
        ...(this.options.quiet ? { quiet: true } : {}),
      });
      const hop: Hop = { agentId: chosen.agent_id, instance: chosen.instance, taskId: inner.taskId, attempt, span };
      if (otel) {
        hop.otel = otel;
        otel.setAttributes({ 'tap.task_id': inner.taskId });
      }
      this.hops.push(hop);
      this.current = inner;
      this.attempts.push(inner.taskId);
      const step = await this.follow(inner, client, chosen);
      release();
      hop.taskId = inner.taskId;
      hop.outcome = step.outcome;
      otel?.end({ outcome: step.outcome, code: errorCodeOf(step) });
      if (step.kind === 'unsent') {
        // The request never went out: it was no attempt and began no span, so its number is still free (TAP-MESH-013, TAP-MESH-023).
        this.nextAttempt = attempt;
        this.hops.pop();
        this.attempts.pop();
        unreached.push(chosen.agent_id);
        this.host.unreachable?.(chosen);
      }
      if (step.kind === 'end') return step.error ? this.settle(step.error) : this.settle(undefined, step.result);
      lastError = step.error;
      if (step.kind === 'refused') refused.add(chosen.agent_id);
      else lost.add(chosen.agent_id);
      if (this.cancelRequested) return this.settle(step.error);
    }
  }

  /** Follows one attempt to its end, and says whether the copy ends or moves (spec: mesh#moving). */
  private async follow(
    inner: TaskHandle,
    client: TapClient,
    entry: MeshEntry,
  ): Promise<
    | { kind: 'end'; outcome: string; result?: ResultPayload; error?: Error }
    | { kind: 'move' | 'refused' | 'unsent'; outcome: string; error: Error }
  > {
    inner.accepted.then(
      (a) => this.markAccepted(a),
      () => undefined,
    );
    const forward = (async () => {
      for await (const m of inner.messages) if (m.type !== 'task.result') this.feed.push(m);
    })().catch(() => undefined);
    try {
      const result = await inner.result;
      await forward;
      const error = result.error;
      if (result.status !== 'completed' && error?.retryable && !this.cancelRequested) {
        // A retryable ending promises nothing a retry could repeat (TAP-IDEM-012), hand-off or not.
        return { kind: 'move', outcome: 'moved', error: TapClientError.fromPayload(error, inner.taskId) };
      }
      const last = inner.log[inner.log.length - 1];
      if (last?.type === 'task.result') this.feed.push(last);
      return { kind: 'end', outcome: String(result.status), result };
    } catch (err) {
      await forward;
      const e = err as TapClientError;
      // The session went down before the request went out: the agent saw nothing, so the copy may move (TAP-MESH-023).
      if (e.unsent && !this.cancelRequested) return { kind: 'unsent', outcome: 'unsent', error: e };
      const refusal = e.payload !== undefined && !LOSS_CODES.has(e.code) && !inner.log.length;
      if (refusal) {
        // The agent refused the request: nothing ran there (spec: mesh#moving, case 2).
        if (e.retryable && !this.cancelRequested) return { kind: 'refused', outcome: 'refused', error: e };
        return { kind: 'end', outcome: e.code, error: e };
      }
      // The agent is lost for this copy (spec: mesh#agent-lost).
      const span = this.hops[this.hops.length - 1]!.span;
      if (this.mayMoveLost(client, entry) && !this.cancelRequested) {
        this.host.ended(span, inner.taskId, entry.agent_id, e.code, 'moved');
        return { kind: 'move', outcome: 'lost', error: e };
      }
      this.host.ended(span, inner.taskId, entry.agent_id, e.code, 'indeterminate');
      return {
        kind: 'end',
        outcome: 'indeterminate',
        error: new TapClientError(
          e.code,
          `${entry.agent_id} was lost while it held task ${inner.taskId} of ${this.capability}, which has side effects: the work may or may not have happened, so the task is not moved (${e.message})`,
          { indeterminate: true, taskId: inner.taskId, cause: e },
        ),
      };
    }
  }

  /** The error of a copy that reached no agent: nothing was sent anywhere (TAP-MESH-024). */
  private noneAnswered(tried: readonly string[], last: Error | undefined, deadlineMs?: number): TapClientError {
    const why = deadlineMs !== undefined ? `its deadline of ${deadlineMs} ms passed after trying` : 'no session could be opened to';
    const advice = natsDown(last)
      ? "this requester's own connection to the NATS server is down, so the agents may well run: check the server"
      : 'Check that these agents run; their registry entries stay listed until they expire';
    return new TapClientError(
      ClientCode.UNREACHABLE,
      `no agent that offers ${this.capability} answered: ${why} ${tried.join(', ')}${last ? ` (last: ${last.message})` : ''}; nothing was sent. ${advice}`,
      { unsent: true, ...(last ? { cause: last } : {}) },
    );
  }

  /** A lost copy may move only when its capability declares no side effects (spec: mesh#moving, case 1). */
  private mayMoveLost(client: TapClient, entry: MeshEntry): boolean {
    let card = entry.card;
    try {
      card = client.agent;
    } catch {
      // The handshake card is the one that counts (TAP-REG-037); the entry's stands in before it.
    }
    const cap = card.capabilities.find((c) => c.name === this.capability);
    return cap !== undefined && cap.side_effects === false;
  }

  private markAccepted(a: Accepted): void {
    if (this.isAccepted) return;
    this.isAccepted = true;
    this.resolveAccepted(a);
  }

  private settle(error?: Error, result?: ResultPayload): void {
    if (this.done) return;
    this.done = true;
    if (error) {
      if (!this.isAccepted) this.rejectAccepted(error);
      this.rejectResult(error);
      this.feed.fail(error);
    } else {
      if (!this.isAccepted) this.rejectAccepted(new TapClientError('CLOSED', 'the task ended before it was accepted'));
      this.resolveResult(result!);
      this.feed.end();
    }
  }
}

/**
 * The 1.1 trace context of an attempt: the traceparent of the attempt's own span in the trace the
 * copy continues, with that trace's flags, tracestate and baggage (TAP-TRACE-107); none when the
 * copy continues no trace context (the client then makes one of the attempt's trace_id and span_id).
 */
function hopTraceContext(parent: TraceContext | undefined, span: Span): TraceContext | Record<string, never> {
  const flags = parseTraceparent(parent?.traceparent)?.flags;
  if (!parent || flags === undefined) return {};
  return extended(parent, { traceparent: `00-${span.trace_id}-${span.span_id}-${flags}` });
}

/** The error code an attempt ended with, if any. */
function errorCodeOf(step: { error?: Error; result?: ResultPayload }): string | undefined {
  return (step.error as { code?: string } | undefined)?.code ?? step.result?.error?.code;
}

/** True when an error, or one of its causes, is the NATS client's own: its connection to the server is down or closed. */
function natsDown(err: unknown): boolean {
  for (let e = err, depth = 0; e instanceof Error && depth < 8; e = e.cause, depth++) {
    if (/connection disconnected|closed connection|connection closed/i.test(e.message)) return true;
  }
  return false;
}
