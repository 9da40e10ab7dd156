/**
 * The requester side of a mesh: finds agents in the registry by capability, routes submissions
 * to them (least-loaded, round-robin, broadcast, with a fan-out limit), reuses one session per
 * agent, moves copies whose agent is lost or hands them off, and carries one trace across every
 * hop, optionally writing a trace record per message (spec: mesh).
 */
import { TapClientError, type PlanDecision, type PlanSubmitPayload, type ResultPayload, type TaskHandle } from '../client/index.ts';
import type { Logger, ReconnectPolicy, TapClient, TaskListOptions, TaskPage } from '../client/index.ts';
import { extended } from '../core/extended.ts';
import { messageIds } from '../core/ids.ts';
import { newTraceparent, parseTraceparent, type TraceContext } from '../core/trace-context.ts';
import { randomBytes } from '../crypto.ts';
import { inputRefusal } from '../client/input-check.ts';
import { currentTaskScope, wantTaskScopes } from '../task-scope.ts';
import { loadTelemetry, type SpanParent, type TapSpan, type Telemetry, type TelemetryOptions } from '../telemetry.ts';
import { ConnectionPool, natsConnector, type Connector } from './pool.ts';
import type { DiscoveryQuery, MeshEntry, MeshRegistry, RegistryChange } from './registry-view.ts';
import { route, type Candidate, type RoutePolicy, type RouteState } from './routing.ts';
import type { CopyHost, Picked } from './copy-host.ts';
import { MeshTask } from './task.ts';
import { FrameRecorder, newTraceId, type Span, type TraceParent, type TraceSink } from './trace.ts';

/** Options of a Mesh. */
export interface MeshOptions {
  /** The registry to read (spec: registry). */
  registry: MeshRegistry;
  /** This requester's agent id, the `source` of its sessions. */
  agentId: string;
  /** Opens a session to an entry's agent (default: over its NATS endpoint). */
  connect?: Connector;
  /** Options of the default connector: a shared NATS connection, the request timeout. */
  nats?: { nc?: import('@nats-io/transport-node').NatsConnection; requestTimeoutMs?: number };
  /** Receives one trace record per message sent or received (spec: mesh#trace-records); off by default. */
  traceSink?: TraceSink;
  logger?: Logger;
  /**
   * How each pooled session reconnects after a loss before its tasks move or end (default 3
   * attempts, 100–400 ms apart, which a NATS outage of several seconds outlasts).
   */
  reconnect?: Partial<ReconnectPolicy>;
  /** The most attempts of one copy, across agents (default 6; TAP-MESH-015). */
  maxAttempts?: number;
  /**
   * How long a copy whose listed agents all failed to open a session waits for discovery to list
   * another before it fails unsent (default 2000 ms, never past the task's timeoutMs; TAP-MESH-024).
   */
  unreachedWaitMs?: number;
  /** Runs after `close`, once the sessions are closed (e.g. closes a connection the mesh was made with). */
  onClose?: () => Promise<void>;
  /**
   * Traces every submission with OpenTelemetry: one client span per attempt (hop), under the span
   * the submission continues, whose id the attempt's traceparent carries. `{}` uses the global
   * tracer provider, `{ tracer }` a tracer of your own; needs the optional peer @opentelemetry/api
   * (default: off).
   */
  telemetry?: TelemetryOptions;
}

/** Options of `mesh.submit`. */
export interface MeshSubmitOptions {
  /** The routing policy (default least-loaded). */
  route?: RoutePolicy;
  /** The most agents the submission goes to (default 1; broadcast: all candidates). */
  fanoutLimit?: number;
  /** The key of the submission; a fan-out's copy n gets `<key>.n` (TAP-MESH-007). Default: a fresh one. */
  idempotencyKey?: string;
  /** Continue this trace, as a router does with its own task's `ctx.trace` (TAP-MESH-020); inside a handler, that task's by default. */
  trace?: TraceParent;
  /**
   * TAP 1.1: continue this W3C trace context: each attempt carries a traceparent of its own span in
   * it (TAP-TRACE-107). Inside a handler, that task's by default.
   */
  traceContext?: TraceContext;
  /** TAP 1.1: the task's delegation path; inside a handler, that task's path and the agent's id by default (spec: mesh#delegation). */
  delegation?: readonly string[];
  /** A version range the capability must satisfy (spec: registry#version-ranges). */
  version?: string;
  permissions?: string[];
  timeoutMs?: number;
  onPlan?: (plan: PlanSubmitPayload, handle: TaskHandle) => PlanDecision | Promise<PlanDecision>;
  /** TAP 1.1: each attempt asks for the outcome only, on a hop whose session negotiated 1.1 (spec: mesh#quiet-copies). */
  quiet?: boolean;
}

/** One copy's outcome in a fan-out, by agent. */
export interface CopyOutcome {
  agentId: string;
  result?: ResultPayload;
  error?: Error;
}

/** A submission: its copies (one unless it fanned out) and their outcomes per agent. */
export interface MeshSubmission {
  readonly traceId: string;
  readonly copies: readonly MeshTask[];
  /** Each copy's outcome, by the agent that ended it, once every copy has ended. */
  readonly results: Promise<CopyOutcome[]>;
}

/** A requester that routes through a registry. */
export class Mesh {
  private readonly pool: ConnectionPool;
  private readonly inFlight = new Map<string, number>();
  private readonly turns = new Map<string, number>();
  /** A submission's default idempotency key: this requester's random prefix and a counter, unique without a clock. */
  private readonly newKey = messageIds();
  /** What routing reads of this requester: its copies in flight per agent, and the turns. */
  private readonly routeState: RouteState = {
    inFlight: (agentId) => this.inFlight.get(agentId) ?? 0,
    nextTurn: (key) => {
      const t = this.turns.get(key) ?? 0;
      this.turns.set(key, t + 1);
      return t;
    },
  };
  private readonly recorders = new Map<string, FrameRecorder>();
  /** Agents no session could be opened to, with the entry they had then: routed to last until it is renewed or goes (TAP-MESH-025). */
  private readonly suspects = new Map<string, { instance: string; updatedAt: string }>();
  private unwatch?: Promise<() => void>;
  private closed = false;
  private telemetry?: Promise<Telemetry>;

  constructor(private readonly options: MeshOptions) {
    wantTaskScopes('a mesh');
    const sink = options.traceSink;
    this.pool = new ConnectionPool(
      options.connect ??
        natsConnector({
          requesterId: options.agentId,
          ...(options.nats?.nc ? { nc: options.nats.nc } : {}),
          ...(options.nats?.requestTimeoutMs !== undefined ? { requestTimeoutMs: options.nats.requestTimeoutMs } : {}),
          ...(options.logger ? { logger: options.logger } : {}),
          ...(options.reconnect ? { reconnect: options.reconnect } : {}),
          ...(sink ? { frames: (agentId, dir, text) => this.recorder(agentId, sink).frame(dir, text) } : {}),
        }),
    );
    // A stale entry makes its agent lost: its session is closed and its copies move or end (TAP-MESH-008).
    this.unwatch = options.registry.watch((change) => this.changed(change));
    this.unwatch.catch((err) => options.logger?.('warn', 'the registry watch failed', { error: (err as Error).message }));
  }

  /** The live entries offering a capability (spec: registry#discovery). */
  discover(query: DiscoveryQuery): Promise<MeshEntry[]> {
    return this.options.registry.list(query);
  }

  /** Calls `fn` for each registry change until the returned function is called. */
  watch(fn: (change: RegistryChange) => void): Promise<() => void> {
    return this.options.registry.watch(fn);
  }

  /** The number of agents this mesh holds a session with. */
  get sessions(): number {
    return this.pool.size;
  }

  /** Submits a task to one agent, or to several with a fan-out; each copy moves on loss (spec: mesh#routing, mesh#moving). */
  async submit(capability: string, input: unknown, options: MeshSubmitOptions = {}): Promise<MeshSubmission> {
    if (this.closed) throw new TapClientError('CLOSED', 'the mesh is closed');
    // An input every agent would refuse is refused here, before any agent is chosen (TAP-ENV-002).
    const refusal = inputRefusal(capability, input);
    if (refusal) throw refusal;
    if (this.options.telemetry) this.telemetry ??= loadTelemetry(this.options.telemetry);
    const telemetry = await this.telemetry;
    // Inside a handler the submission continues that task: its trace, span and delegation path (spec: mesh#delegation).
    const scope = currentTaskScope();
    const trace = options.trace ?? scope?.trace;
    const delegation = options.delegation ?? scope?.delegation;
    let traceContext = options.traceContext ?? scope?.span?.traceContext ?? scope?.traceContext;
    const policy = options.route ?? 'least-loaded';
    const query: DiscoveryQuery = { capability, binding: 'nats' };
    if (options.version !== undefined) query.version = options.version;
    if (options.permissions) query.permissions = options.permissions;
    const found = await this.discover(query);
    // Never to an agent on the task's own path (TAP-MESH-152).
    const entries = delegation?.length ? found.filter((e) => !delegation.includes(e.agent_id)) : found;
    if (entries.length === 0 && found.length > 0) {
      throw new TapClientError(
        'DELEGATION_LOOP',
        `every live agent that offers ${capability} (${found.map((e) => e.agent_id).join(', ')}) is already on the delegation path ${delegation!.join(' → ')}; nothing was sent`,
        { unsent: true },
      );
    }
    const chosen = this.route(policy, entries, {
      capability,
      ...(options.fanoutLimit !== undefined ? { fanoutLimit: options.fanoutLimit } : {}),
    });
    if (chosen.length === 0) {
      const filter = JSON.stringify(query);
      // Agents that offer it over another binding only are listed, but the mesh routes over NATS.
      const elsewhere = found.length === 0 ? (await this.discover({ ...query, binding: undefined })).map((e) => e.agent_id) : [];
      const why = elsewhere.length
        ? `; ${elsewhere.join(', ')} ${elsewhere.length === 1 ? 'offers' : 'offer'} it with no NATS endpoint, and the mesh routes over NATS`
        : '';
      throw new TapClientError(
        'CAPABILITY_NOT_SUPPORTED',
        `no live agent in the registry offers ${capability} (filter ${filter})${why}; nothing was sent`,
      );
    }
    // With telemetry, a submission that continues no span gets one of its own: the parent its attempts share (TAP-MESH-021).
    let root: TapSpan | undefined;
    if (telemetry && !traceContext && !scope?.span) {
      // A trace_id the caller gave stays the trace: the span starts under it as a remote parent.
      const given = trace ? { traceparent: newTraceparent(randomBytes, trace.trace_id, trace.span_id) } : undefined;
      root = telemetry.start(`submit ${capability}`, 'internal', { traceContext: given }, { 'tap.capability': capability });
      if (root) traceContext = root.traceContext;
    }
    const parentSpan = root ?? scope?.span;
    const contextTrace = parseTraceparent(traceContext?.traceparent);
    // The trace of the context wins over a trace_id that disagrees with it (TAP-TRACE-102).
    const traceId = contextTrace?.traceId ?? trace?.trace_id ?? newTraceId();
    // A router's onward attempts name its own task's span as their parent (TAP-MESH-020).
    const parentSpanId = trace?.span_id ?? contextTrace?.parentId;
    const key = options.idempotencyKey ?? `mesh-${this.newKey()}`;
    const copies: MeshTask[] = [];
    const held = (): ReadonlySet<string> => new Set(copies.map((c) => c.agentId).filter((a): a is string => a !== undefined));
    chosen.forEach((c, i) => {
      const host = this.copyHost(
        query,
        options,
        { telemetry, parent: parentSpan ? { span: parentSpan } : { traceContext }, delegation },
        (self) => {
          const others = held();
          const mine = self.agentId;
          return new Set([...others].filter((a) => a !== mine));
        },
      );
      const copy = new MeshTask(host.host, capability, input, {
        idempotencyKey: chosen.length > 1 ? `${key}.${i + 1}` : key,
        traceId,
        ...(parentSpanId !== undefined ? { parentSpanId } : {}),
        ...(traceContext ? { traceContext } : {}),
        ...(delegation?.length ? { delegation } : {}),
        ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
        ...(options.onPlan ? { onPlan: options.onPlan } : {}),
        ...(options.quiet ? { quiet: true } : {}),
        first: this.reserve(entries.find((e) => e.agent_id === c.agentId)!),
      });
      host.bind(copy);
      copies.push(copy);
    });
    const results = Promise.all(
      copies.map((c) =>
        c.result.then(
          (result): CopyOutcome => ({ agentId: c.agentId ?? '', result }),
          (error: Error): CopyOutcome => ({ agentId: c.agentId ?? '', error }),
        ),
      ),
    );
    if (root) {
      void results.then((outcomes) => {
        const failed = outcomes.find((o) => o.error || o.result?.status !== 'completed');
        root.end(
          failed
            ? {
                outcome: failed.result?.status ?? 'failed',
                code: (failed.error as { code?: string } | undefined)?.code ?? failed.result?.error?.code,
              }
            : { outcome: 'completed' },
        );
      });
    }
    return { traceId, copies, results };
  }

  /** Submits to one agent and returns its copy: the handle to follow, as `client.submit` returns (spec: mesh#routing). */
  async task(capability: string, input: unknown, options: Omit<MeshSubmitOptions, 'fanoutLimit'> = {}): Promise<MeshTask> {
    const s = await this.submit(capability, input, extended(options, { fanoutLimit: 1 }));
    return s.copies[0]!;
  }

  /**
   * One page of this mesh's tasks at the agent `agentId`, through the session the mesh holds with it
   * (opened when it holds none): the agent lists the tasks of the mesh's principal, filtered by
   * `state` and `capability` (spec: tasks#listing). Rejects with UNKNOWN_AGENT when the registry
   * holds no live entry of it with a NATS endpoint, and with UNKNOWN_MESSAGE_TYPE, nothing sent,
   * when it speaks TAP 1.0 in that session.
   */
  async listTasks(agentId: string, options: TaskListOptions = {}): Promise<TaskPage> {
    if (this.closed) throw new TapClientError('CLOSED', 'the mesh is closed');
    const entry = (await this.discover({ binding: 'nats' })).find((e) => e.agent_id === agentId);
    if (!entry)
      throw new TapClientError('UNKNOWN_AGENT', `the registry holds no live entry of ${agentId} with a NATS endpoint; nothing was sent`, {
        unsent: true,
      });
    return (await this.pool.client(entry)).listTasks(options);
  }

  /** Closes every session and stops watching the registry. */
  async close(): Promise<void> {
    this.closed = true;
    const stop = await this.unwatch?.catch(() => undefined);
    stop?.();
    await this.pool.close();
    await this.options.onClose?.();
  }

  private changed(change: RegistryChange): void {
    if (change.kind !== 'live') this.suspects.delete(change.agentId);
    if (change.kind === 'stale') this.pool.drop(change.agentId);
  }

  /** True while the entry is the one its agent had when no session could be opened to it (TAP-MESH-025). */
  private suspected(e: MeshEntry): boolean {
    const s = this.suspects.get(e.agent_id);
    if (!s) return false;
    if (s.instance === e.instance && s.updatedAt === e.updated_at) return true;
    // Renewed, or a new instance: the agent answers for itself again.
    this.suspects.delete(e.agent_id);
    return false;
  }

  /** Routes among the candidates no session failed to open to, then, for what is left, among the others (TAP-MESH-025). */
  private route(policy: RoutePolicy, entries: readonly MeshEntry[], options: { capability: string; fanoutLimit?: number }): Candidate[] {
    const doubted = this.suspects.size === 0 ? [] : entries.filter((e) => this.suspected(e));
    if (doubted.length === 0) return route(policy, entries.map(candidateOf), this.routeState, options);
    const trusted = entries.filter((e) => !doubted.includes(e));
    const first = route(policy, trusted.map(candidateOf), this.routeState, options);
    const wanted = Math.min(options.fanoutLimit ?? (policy === 'broadcast' ? entries.length : 1), entries.length);
    if (first.length >= wanted) return first;
    const rest = route(policy, doubted.map(candidateOf), this.routeState, extended(options, { fanoutLimit: wanted - first.length }));
    return [...first, ...rest];
  }

  private recorder(agentId: string, sink: TraceSink): FrameRecorder {
    let r = this.recorders.get(agentId);
    if (!r) {
      r = new FrameRecorder(this.options.agentId, sink);
      this.recorders.set(agentId, r);
    }
    return r;
  }

  /**
   * Counts a copy in flight on the entry's agent from the moment routing chose it, so that copies
   * routed before its request goes out see it (TAP-MESH-003); the release uncounts it, once.
   */
  private reserve(entry: MeshEntry): Picked {
    const agentId = entry.agent_id;
    this.inFlight.set(agentId, (this.inFlight.get(agentId) ?? 0) + 1);
    let held = true;
    return {
      entry,
      release: () => {
        if (!held) return;
        held = false;
        this.inFlight.set(agentId, Math.max(0, (this.inFlight.get(agentId) ?? 1) - 1));
      },
    };
  }

  private copyHost(
    query: DiscoveryQuery,
    options: MeshSubmitOptions,
    tracing: { telemetry: Telemetry | undefined; parent: SpanParent; delegation: readonly string[] | undefined },
    siblings: (self: MeshTask) => ReadonlySet<string>,
  ) {
    const { telemetry, parent, delegation } = tracing;
    let self: MeshTask | undefined;
    const sink = this.options.traceSink;
    const host: CopyHost = {
      maxAttempts: this.options.maxAttempts ?? 6,
      unreachedWaitMs: this.options.unreachedWaitMs ?? 2000,
      ...(telemetry
        ? {
            hopSpan: (a) =>
              telemetry.start(`route ${a.capability}`, 'client', parent, {
                'tap.capability': a.capability,
                'tap.agent': a.agentId,
                'tap.attempt': a.attempt,
                'tap.idempotency_key': a.idempotencyKey,
              }),
          }
        : {}),
      pick: async (capability, exclude) => {
        if (this.closed) return undefined;
        const entries = (await this.discover({ ...query, capability })).filter(
          (e) => !exclude.has(e.agent_id) && !delegation?.includes(e.agent_id),
        );
        const [c] = this.route(options.route === 'round-robin' ? 'round-robin' : 'least-loaded', entries, { capability });
        const entry = c ? entries.find((e) => e.agent_id === c.agentId) : undefined;
        return entry ? this.reserve(entry) : undefined;
      },
      client: (entry) => this.pool.client(entry),
      unreachable: (entry) => this.suspects.set(entry.agent_id, { instance: entry.instance, updatedAt: entry.updated_at }),
      siblings: () => (self ? siblings(self) : new Set()),
      ended: (span: Span, taskId, agentId, code, status) => {
        if (sink) this.recorder(agentId, sink).ending(span, taskId, agentId, code, status);
      },
      sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
    };
    return { host, bind: (t: MeshTask) => (self = t) };
  }
}

function candidateOf(e: MeshEntry): Candidate {
  return { agentId: e.agent_id, running: e.load.running_tasks, max: e.load.max_concurrent_tasks };
}

export type { TapClient };
