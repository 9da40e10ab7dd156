/**
 * Several mesh agents in one process: each serves its sessions through NATS under its own id,
 * joins the registry and keeps its entry alive, over one NATS connection shared by all
 * (spec: registry, bindings-nats). The fault test and the demo start these and kill whole
 * processes with SIGKILL; on SIGTERM every agent withdraws its entry and shuts down.
 *
 *   node --import tsx reference/mesh/agent-host.ts --nats nats://127.0.0.1:4222 --ids a,b,c
 *     [--state-root DIR] [--heartbeat-ms 200] [--ttl-ms 600] [--max-concurrent-tasks 16] [--max-tasks-kept N]
 *
 * Prints `ready <agent_id> <url>` per agent, then `ready`, on stdout.
 */
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import type { NatsConnection } from '@nats-io/transport-node';
import { connect } from '../transports/nats/client.ts';
import { createAgent, withConformanceCapabilities, type Agent, type CapabilityDefinition, type Handler } from '../agent/index.ts';
import { LEAN_CLIENT, natsClientOptions, parseNatsUrl } from '../transports/nats/url.ts';
import { joinMesh, type Membership } from './member.ts';
import { recordSessionsToFile, type RecordingFile } from './recording.ts';
import type { AgentCard } from '../../schemas/src/index.ts';

/** The card of a hosted agent: no capabilities of its own (the runtime adds them), the given concurrency. */
export function hostCard(agentId: string, maxConcurrentTasks = 16): AgentCard {
  return {
    agent_id: agentId,
    name: agentId,
    description: 'A TAP agent hosted with others in one process, joined to a mesh.',
    capabilities: [],
    limits: { max_concurrent_tasks: maxConcurrentTasks, max_task_seconds: 600, max_message_bytes: 1048576 },
  };
}

/** Options of `hostAgents`. */
export interface HostOptions {
  url: string;
  /** Serve over this open connection instead of one of its own to `url`; stop() drains it all the same. */
  nc?: NatsConnection;
  ids: string[];
  /** Each agent keeps a journal in `<stateRoot>/<agent_id>` when given. */
  stateRoot?: string;
  heartbeatMs: number;
  ttlMs: number;
  maxConcurrentTasks?: number;
  /**
   * Tasks each agent keeps, finished ones for their retention (the resume window) included, in all
   * and per principal (default 4096 per principal; spec: limits#table-limits). A requester that
   * sends one agent more than this within the window gets BUSY.
   */
  maxTasksKept?: number;
  /** Capabilities besides the conformance ones, per agent id (default none). */
  capabilities?: (agentId: string) => Record<string, Handler | CapabilityDefinition>;
  /** The agent's card description (default: a mesh test agent). */
  describe?: (agentId: string) => string;
  /** Each agent writes a trace record per message to `<traceDir>/<agent_id>.agent.jsonl` (spec: mesh#trace-records). */
  traceDir?: string;
  /** Runs once per agent, after it joined. */
  joined?: (agentId: string, agent: Agent) => void;
}

/** A running host. */
export interface Host {
  readonly nc: NatsConnection;
  readonly agents: Map<string, { agent: Agent; membership: Membership }>;
  /** Withdraws every entry, shuts every agent down and closes the connection. */
  stop(reason: string): Promise<void>;
}

/** Starts the agents, each listening and joined to the mesh. */
export async function hostAgents(options: HostOptions): Promise<Host> {
  const address = parseNatsUrl(options.url);
  const nc =
    options.nc ??
    (await connect({ ...natsClientOptions(address), name: `tap mesh host ${options.ids[0]}`, maxReconnectAttempts: -1, ...LEAN_CLIENT }));
  const agents = new Map<string, { agent: Agent; membership: Membership }>();
  /** The trace files, closed after the agents stopped so that their last records are written. */
  const recordings: RecordingFile[] = [];
  await Promise.all(
    options.ids.map(async (id) => {
      const card = hostCard(id, options.maxConcurrentTasks ?? 16);
      if (options.describe) card.description = options.describe(id);
      const agent = createAgent({
        card,
        capabilities: withConformanceCapabilities(options.capabilities?.(id) ?? {}),
        shutdownGraceMs: 2000,
        heartbeatMs: 1000,
        // The host's own signal handling withdraws every entry first.
        signals: false,
        ...(options.stateRoot ? { stateDir: join(options.stateRoot, id) } : {}),
        ...(options.maxTasksKept !== undefined
          ? { maxTasksKept: options.maxTasksKept, maxTasksKeptPerPrincipal: options.maxTasksKept }
          : {}),
        logger: () => {},
      });
      const recording = options.traceDir
        ? await recordSessionsToFile(id, join(options.traceDir, `${id}.agent.jsonl`), (err) =>
            process.stderr.write(`agent-host: ${err.message}\n`),
          )
        : undefined;
      if (recording) recordings.push(recording);
      const listener = await agent.listenNats({ nc, keepaliveMs: 250, ...(recording ? { wrap: recording.wrap } : {}) });
      const membership = await joinMesh(
        { nc, heartbeatMs: options.heartbeatMs, ttlMs: options.ttlMs },
        {
          card: agent.card,
          versions: ['1.0'],
          endpoints: () => [{ binding: 'nats', url: listener.url }],
          runningTasks: () => agent.runningTasks(),
        },
      );
      agents.set(id, { agent, membership });
      options.joined?.(id, agent);
      process.stdout.write(`ready ${id} ${listener.url}\n`);
    }),
  );
  return {
    nc,
    agents,
    async stop(reason) {
      await Promise.all(
        [...agents.values()].map(async ({ agent, membership }) => {
          // The entry goes first, so that nobody picks the agent while it hands its tasks off (TAP-REG-026).
          await membership.leave().catch(() => undefined);
          await agent.shutdown(reason).catch(() => undefined);
        }),
      );
      await Promise.all(recordings.map((r) => r.close()));
      await nc.drain().catch(() => undefined);
    },
  };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      nats: { type: 'string' },
      ids: { type: 'string' },
      'state-root': { type: 'string' },
      'heartbeat-ms': { type: 'string', default: '200' },
      'ttl-ms': { type: 'string', default: '600' },
      'max-concurrent-tasks': { type: 'string', default: '16' },
      'max-tasks-kept': { type: 'string' },
    },
  });
  if (!values.nats || !values.ids) {
    process.stderr.write('agent-host: give --nats nats://host:port and --ids a,b,c\n');
    process.exit(2);
  }
  const host = await hostAgents({
    url: values.nats,
    ids: values.ids.split(','),
    ...(values['state-root'] ? { stateRoot: values['state-root'] } : {}),
    heartbeatMs: Number(values['heartbeat-ms']),
    ttlMs: Number(values['ttl-ms']),
    maxConcurrentTasks: Number(values['max-concurrent-tasks']),
    ...(values['max-tasks-kept'] ? { maxTasksKept: Number(values['max-tasks-kept']) } : {}),
  });
  process.stdout.write('ready\n');
  const stop = (signal: string): void => {
    void host.stop(`the host received ${signal}`).then(() => process.exit(0));
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((err) => {
    process.stderr.write(`agent-host: ${(err as Error).message}\n`);
    process.exit(1);
  });
}
