/** tapctl nats status: the server, JetStream, and the TAP streams with their message and consumer counts. */
import type { ConsumerInfo } from '@nats-io/jetstream';
import { deadSubject, taskSubject } from '../../jetstream/names.ts';
import { maxDeliveriesAdvisory, Wildcard } from '../../transports/nats/subjects.ts';
import type { CommandContext } from '../registry.ts';
import { duration, printJson, table } from '../workspace/format.ts';
import { withNats, streamInfo, type NatsSession } from './connection.ts';

/** What status reports about one TAP stream. */
export interface StreamStatus {
  name: string;
  role: string;
  exists: boolean;
  messages?: number;
  bytes?: number;
  consumers?: number;
  replicas?: number;
  /** Messages per subject, for the queue and the dead letters (per capability) and the advisories (per consumer). */
  subjects?: Record<string, number>;
}

/** What status reports about one capability's consumer on TAP_TASKS. */
export interface ConsumerStatus {
  name: string;
  filter: string | undefined;
  /** Records not yet delivered. */
  pending: number;
  /** Records delivered and not yet acknowledged: being worked on, or waiting for redelivery. */
  in_flight: number;
  /** Deliveries that were redeliveries. */
  redelivered: number;
  lease_ms: number;
  max_attempts: number;
  waiting_pulls: number;
}

/** The whole status document (the --json output). */
export interface NatsStatus {
  server: { url: string; name: string; id: string; version: string; cluster?: string; max_payload: number };
  jetstream: { streams: number; consumers: number; storage_bytes: number; memory_bytes: number; domain?: string };
  streams: StreamStatus[];
  consumers: ConsumerStatus[];
}

const ms = (nanos: number): number => Math.round(nanos / 1_000_000);

/** Collects the status document over an open session. */
export async function natsStatus(s: NatsSession): Promise<NatsStatus> {
  const info = s.nc.info!;
  const account = await s.jsm.getAccountInfo();
  const n = s.names;
  const roles: Array<[string, string, string | undefined]> = [
    [n.tasks, 'task queue', taskSubject(n, Wildcard.TAIL)],
    [n.results, 'finished records', undefined],
    [n.dead, 'dead letters', deadSubject(n, Wildcard.TAIL)],
    [n.events, 'durable task streams', undefined],
    [`KV_${n.idempotency}`, 'idempotency keys', undefined],
    [n.advisories, 'advisories not yet answered', maxDeliveriesAdvisory(n.tasks, Wildcard.TOKEN)],
  ];
  const streams: StreamStatus[] = [];
  for (const [name, role, filter] of roles) {
    const si = await streamInfo(s, name, filter);
    streams.push(
      si
        ? {
            name,
            role,
            exists: true,
            messages: si.state.messages,
            bytes: si.state.bytes,
            consumers: si.state.consumer_count,
            replicas: si.config.num_replicas,
            ...(filter ? { subjects: si.state.subjects ?? {} } : {}),
          }
        : { name, role, exists: false },
    );
  }
  const consumers: ConsumerStatus[] = [];
  if (streams[0]!.exists) {
    for await (const c of s.jsm.consumers.list(n.tasks) as AsyncIterable<ConsumerInfo>) {
      consumers.push({
        name: c.name,
        filter: c.config.filter_subject,
        pending: c.num_pending,
        in_flight: c.num_ack_pending,
        redelivered: c.num_redelivered,
        lease_ms: ms(c.config.ack_wait ?? 0),
        max_attempts: c.config.max_deliver ?? -1,
        waiting_pulls: c.num_waiting,
      });
    }
  }
  return {
    server: {
      url: s.url,
      name: info.server_name,
      id: info.server_id,
      version: info.version,
      ...(info.cluster ? { cluster: info.cluster } : {}),
      max_payload: info.max_payload,
    },
    jetstream: {
      streams: account.streams,
      consumers: account.consumers,
      storage_bytes: account.storage,
      memory_bytes: account.memory,
      ...(account.domain ? { domain: account.domain } : {}),
    },
    streams,
    consumers,
  };
}

/** Runs `tapctl nats status` with parsed options. */
export async function runStatus(o: { server: string; json: boolean }, ctx: CommandContext): Promise<number> {
  return withNats(o.server, async (s) => {
    const st = await natsStatus(s);
    if (o.json) {
      printJson(ctx.io, st);
      return 0;
    }
    const v = st.server;
    let text = `Server ${v.name} (nats-server ${v.version}) at ${v.url}${v.cluster ? `, cluster ${v.cluster}` : ''}, max_payload ${v.max_payload} bytes\n`;
    text += `JetStream: ${st.jetstream.streams} streams, ${st.jetstream.consumers} consumers, ${st.jetstream.storage_bytes} bytes on disk\n\n`;
    text += 'TAP streams\n';
    text += table(
      st.streams.map((x) =>
        x.exists
          ? [x.name, x.role, `${x.messages} messages`, `${x.consumers} consumers`, `R${x.replicas}`]
          : [x.name, x.role, 'missing: the first durable runner or submit creates it', '', ''],
      ),
    );
    const queue = st.streams[0]!;
    const perSubject = Object.entries(queue.subjects ?? {});
    if (perSubject.length > 0) {
      text += '\nQueued records per capability\n';
      text += table(perSubject.map(([subject, count]) => [subject.slice(taskSubject(s.names, Wildcard.TAIL).length - 1), String(count)]));
    }
    const dead = Object.entries(st.streams[2]!.subjects ?? {});
    if (dead.length > 0) {
      text += '\nDead letters per capability\n';
      text += table(dead.map(([subject, count]) => [subject.slice(deadSubject(s.names, Wildcard.TAIL).length - 1), String(count)]));
    }
    const unanswered = Object.entries(st.streams[5]!.subjects ?? {});
    if (unanswered.length > 0) {
      // spec: bindings-nats#dead-letters: each is a record out of deliveries that goes to the dead letters once a runner of its capability pulls.
      text += '\nMax-deliveries advisories waiting for a runner, per consumer\n';
      text += table(unanswered.map(([subject, count]) => [subject.slice(subject.lastIndexOf('.') + 1), String(count)]));
    }
    if (st.consumers.length > 0) {
      text += "\nRunners' consumers on the queue\n";
      text += table(
        st.consumers.map((c) => [
          c.name,
          c.filter ?? '(all)',
          `${c.pending} waiting`,
          `${c.in_flight} in flight`,
          `${c.redelivered} redelivered`,
          `lease ${duration(c.lease_ms)}, at most ${c.max_attempts} deliveries`,
          c.waiting_pulls > 0 ? `${c.waiting_pulls} runner pulls open` : 'no runner pulling',
        ]),
      );
    }
    ctx.io.out(text);
    return 0;
  });
}
