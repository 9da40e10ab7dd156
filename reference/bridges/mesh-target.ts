/**
 * A mesh as the TAP side of a facade (spec: bridge-mcp-host#mesh, bridge-a2a#mesh): the
 * capabilities of the live agents in its registry stand for one card, and each call is a mesh
 * task routed to one of the agents that offer its capability, through reference/mesh's requester
 * (routing, moving, traces).
 */
import type { AgentCard, Capability } from '../../schemas/src/index.ts';
import type { MessageOf } from '../core/index.ts';
import type { PlanDecision, ResultPayload, SnapshotPayload, StreamMessage, SubmitOptions, TapClient } from '../client/index.ts';
import type { Mesh, MeshEntry, MeshTask } from '../mesh/index.ts';
import { compareVersions, parseVersion } from '../mesh/semver.ts';
import { type BridgeArgs, connectTarget, UsageError } from './tap-target.ts';

/** A task a facade follows: a session's TaskHandle, or a mesh task once it is routed. */
export interface FacadeTask {
  readonly taskId: string;
  readonly events: AsyncIterable<MessageOf<'task.event'>>;
  /** Every message of the task's stream, of each attempt in turn. */
  readonly messages: AsyncIterable<StreamMessage>;
  readonly result: Promise<ResultPayload>;
  /** The plan waiting for a decision, as far as the handle knows. */
  readonly plan?: { plan_id: string; state: string } | undefined;
  cancel(reason?: string): Promise<unknown>;
  decide(planId: string, decision: PlanDecision): Promise<SnapshotPayload>;
}

/** The options of a call a facade makes: a trace in envelope metadata, an idempotency key, a plan's decision. */
export type FacadeSubmitOptions = Pick<SubmitOptions, 'metadata' | 'idempotencyKey' | 'onPlan'>;

/** The mesh a facade serves: its live capabilities as one card, and a call as a mesh task. */
export interface MeshTarget {
  /** A card whose capabilities are those the live agents offer now (the highest version of each name). */
  readonly agent: AgentCard;
  submit(capability: string, input: unknown, options?: FacadeSubmitOptions): FacadeTask;
  close(): Promise<void>;
}

/** The capabilities of `entries` by name, each at its highest version; only `names` when given. */
export function meshCapabilities(entries: readonly MeshEntry[], names?: readonly string[]): Capability[] {
  const byName = new Map<string, Capability>();
  for (const entry of entries) {
    for (const c of entry.card.capabilities) {
      if (names !== undefined && !names.includes(c.name)) continue;
      const held = byName.get(c.name);
      const mine = parseVersion(c.version);
      const theirs = held === undefined ? undefined : parseVersion(held.version);
      if (held === undefined || (mine !== undefined && (theirs === undefined || compareVersions(mine, theirs) > 0))) byName.set(c.name, c);
    }
  }
  return [...byName.values()].sort((a, b) => a.name.localeCompare(b.name));
}

/** The card a facade shows for a mesh. */
function meshCard(url: string, capabilities: Capability[]): AgentCard {
  return {
    agent_id: 'tap.mesh',
    name: 'TAP mesh',
    description:
      `The capabilities of the live agents in the TAP mesh whose registry is at ${url}; ` +
      'each call goes as a task to one agent that offers its capability (least loaded first).',
    capabilities,
    limits: { max_concurrent_tasks: 1024, max_task_seconds: 3600, max_message_bytes: 1_048_576 },
  };
}

/** A task handed back at once while the mesh routes it: each member waits for the routed task. */
function deferred(routed: Promise<MeshTask>): FacadeTask {
  let task: MeshTask | undefined;
  routed.then(
    (t) => (task = t),
    () => {},
  );
  return {
    get taskId() {
      return task?.taskId ?? '';
    },
    events: {
      async *[Symbol.asyncIterator]() {
        yield* (await routed).events;
      },
    },
    messages: {
      async *[Symbol.asyncIterator]() {
        yield* (await routed).messages;
      },
    },
    result: routed.then((t) => t.result),
    get plan() {
      return task?.plan;
    },
    async cancel(reason) {
      return (await routed).cancel(reason);
    },
    async decide(planId, decision) {
      return (await routed).decide(planId, decision);
    },
  };
}

/**
 * Serves the mesh whose registry is on the NATS server at `url`, as the requester `agentId`;
 * `capabilities`, when given, limits the tools to those names.
 */
export async function connectMeshTarget(url: string, agentId: string, capabilities?: readonly string[]): Promise<MeshTarget> {
  const { connectMesh } = await import('../mesh/index.ts');
  const mesh: Mesh = await connectMesh(url, { agentId });
  let card = meshCard(url, meshCapabilities(await mesh.discover({ binding: 'nats' }), capabilities));
  // The card follows the registry: an agent joining or leaving changes the tools the next list shows.
  let refreshing = Promise.resolve();
  const stopWatching = await mesh.watch(() => {
    refreshing = refreshing
      .then(async () => {
        card = meshCard(url, meshCapabilities(await mesh.discover({ binding: 'nats' }), capabilities));
      })
      .catch(() => {});
  });
  return {
    get agent() {
      return card;
    },
    submit(capability, input, options = {}) {
      const trace = options.metadata as { traceparent?: unknown; tracestate?: unknown; baggage?: unknown } | undefined;
      const traceContext =
        typeof trace?.traceparent === 'string'
          ? {
              traceparent: trace.traceparent,
              ...(typeof trace.tracestate === 'string' ? { tracestate: trace.tracestate } : {}),
              ...(typeof trace.baggage === 'string' ? { baggage: trace.baggage } : {}),
            }
          : undefined;
      return deferred(
        mesh.task(capability, input, {
          ...(options.idempotencyKey !== undefined ? { idempotencyKey: options.idempotencyKey } : {}),
          ...(options.onPlan !== undefined ? { onPlan: options.onPlan } : {}),
          ...(traceContext !== undefined ? { traceContext } : {}),
        }),
      );
    },
    async close() {
      stopWatching();
      await mesh.close();
    },
  };
}

/**
 * The TAP side a bridge subcommand `command` serves, from its command line: the mesh of --mesh
 * (only the --capability names when given; a name no live agent offers yet is said on stderr as
 * `missing` words it), else the agent of --url or of the command after --. Throws UsageError for
 * --capability without --mesh.
 */
export async function openServed(parsed: BridgeArgs, agentId: string, missing: (names: string) => string): Promise<TapClient | MeshTarget> {
  const only = parsed.options.get('--capability');
  if (only !== undefined && parsed.mesh === undefined)
    throw new UsageError('--capability goes with --mesh; an agent of --url or -- offers its whole card');
  if (parsed.mesh === undefined) return connectTarget(parsed.target!, agentId);
  const names =
    typeof only === 'string'
      ? only
          .split(',')
          .map((n) => n.trim())
          .filter((n) => n !== '')
      : undefined;
  const mesh = await connectMeshTarget(parsed.mesh, agentId, names);
  const live = new Set(mesh.agent.capabilities.map((c) => c.name));
  const absent = (names ?? []).filter((n) => !live.has(n));
  if (absent.length > 0) process.stderr.write(`${missing(absent.join(', '))}\n`);
  return mesh;
}
