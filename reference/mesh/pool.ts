/**
 * One requester session per agent, reused by every task the mesh sends there: opened on first
 * use from the entry's NATS endpoint, forgotten when it closes, and closed when the agent is
 * counted lost (spec: mesh#agent-lost, bindings-nats#opening).
 */
import type { NatsConnection } from '@nats-io/transport-node';
import { connectWith, type TapClient } from '../client/index.ts';
import { connectNatsTransport } from '../transports/nats/connect.ts';
import type { Logger, ReconnectPolicy } from '../client/index.ts';
import type { MeshEntry } from './registry-view.ts';

/** Opens a session to the agent of an entry. */
export type Connector = (entry: MeshEntry) => Promise<TapClient>;

/** Options of the default NATS connector. */
export interface NatsConnectorOptions {
  /** The requester's agent id. */
  requesterId: string;
  /** A NATS connection shared by every session (sessions then open no connection of their own). */
  nc?: NatsConnection;
  logger?: Logger;
  /** Sees every frame of every session, with the agent it goes to or comes from. */
  frames?: (agentId: string, dir: 'in' | 'out', text: string) => void;
  /**
   * How each session reconnects after a loss before its tasks move or end (default 3 attempts,
   * 100–400 ms apart): raise it to ride out a longer outage of the NATS server itself.
   */
  reconnect?: Partial<ReconnectPolicy>;
  /** How long a task.request may wait for its reply, in ms (default 30 000). */
  requestTimeoutMs?: number;
}

/** The default connector: the entry's first NATS endpoint, a short reconnect, a short farewell wait. */
export function natsConnector(options: NatsConnectorOptions): Connector {
  return async (entry) => {
    const endpoint = entry.endpoints.find((e) => e.binding === 'nats');
    if (!endpoint)
      throw new Error(
        `the entry of ${entry.agent_id} has no nats endpoint; it lists ${entry.endpoints.map((e) => e.binding).join(', ') || 'none'}`,
      );
    const nats = {
      agentId: entry.agent_id,
      ...(endpoint.prefix !== undefined ? { prefix: endpoint.prefix } : {}),
      ...(options.nc ? { nc: options.nc } : {}),
    };
    return connectWith(() => connectNatsTransport(endpoint.url, nats), sessionOptions(options, entry.agent_id));
  };
}

/** The options of a pooled session to `agentId`: a short reconnect unless asked otherwise, a short farewell wait. */
export function sessionOptions(options: NatsConnectorOptions, agentId: string): Parameters<typeof connectWith>[1] {
  const frames = options.frames;
  return {
    agentId: options.requesterId,
    target: agentId,
    requires: [],
    closeWaitMs: 200,
    retry: { attempts: 1 },
    reconnect: { attempts: 3, baseMs: 100, maxMs: 400, ...options.reconnect },
    params: { request_timeout_ms: options.requestTimeoutMs ?? 30_000 },
    ...(options.logger ? { logger: options.logger } : {}),
    ...(frames ? { trace: (w: { dir: 'in' | 'out'; text: string }) => frames(agentId, w.dir, w.text) } : {}),
  };
}

/** The open sessions, by agent id and instance. */
export class ConnectionPool {
  private readonly open = new Map<string, { instance: string; client: Promise<TapClient> }>();

  constructor(private readonly connect: Connector) {}

  /** The session to the entry's agent, opened when there is none for its instance. */
  client(entry: MeshEntry): Promise<TapClient> {
    const held = this.open.get(entry.agent_id);
    if (held && held.instance === entry.instance) return held.client;
    if (held) this.drop(entry.agent_id);
    const client = this.connect(entry);
    const slot = { instance: entry.instance, client };
    this.open.set(entry.agent_id, slot);
    client.then(
      (c) => c.on('closed', () => this.open.get(entry.agent_id) === slot && this.open.delete(entry.agent_id)),
      () => this.open.get(entry.agent_id) === slot && this.open.delete(entry.agent_id),
    );
    return client;
  }

  /** The number of open sessions (for tests and tapctl). */
  get size(): number {
    return this.open.size;
  }

  /** Forgets and closes the session to an agent: its unfinished tasks fail with CLOSED. */
  drop(agentId: string): void {
    const held = this.open.get(agentId);
    if (!held) return;
    this.open.delete(agentId);
    held.client.then(
      (c) => c.close('the agent is counted lost').catch(() => undefined),
      () => undefined,
    );
  }

  /** Closes every session. */
  async close(): Promise<void> {
    const all = [...this.open.values()];
    this.open.clear();
    await Promise.all(
      all.map((h) =>
        h.client.then(
          (c) => c.close('mesh closed').catch(() => undefined),
          () => undefined,
        ),
      ),
    );
  }
}
