/**
 * How many replicas a stream or key-value bucket of TAP gets when a member creates it (spec:
 * bindings-nats#replicas, TAP-NATS-070; registry#nats, TAP-REG-065): three on a cluster of three
 * servers or more, as many as the cluster has below that, one on a single server. The size is
 * read from the INFO the server sent on connecting: a clustered server names its `cluster` and
 * lists the client URLs of every server of it (itself included) in `connect_urls`.
 */
import type { NatsConnection } from '@nats-io/transport-node';

/** The replicas TAP asks for on a cluster of three servers or more. */
export const CLUSTER_REPLICAS = 3;
/** The most replicas JetStream keeps of a stream. */
const MOST_REPLICAS = 5;

/** The number of servers the connected server says its cluster has: 1 when it is not clustered. */
export function clusterSize(nc: Pick<NatsConnection, 'info'>): number {
  const info = nc.info;
  if (!info?.cluster) return 1;
  return Math.max(1, new Set(info.connect_urls ?? []).size);
}

/** The replicas of a stream or bucket created on this connection's server: `wanted` when given, else by the cluster's size. */
export function replicasFor(nc: Pick<NatsConnection, 'info'>, wanted?: number): number {
  if (wanted !== undefined) return checkReplicas(wanted);
  return Math.min(CLUSTER_REPLICAS, clusterSize(nc));
}

/** A replica count an option gave, checked: a whole number from 1 to 5, JetStream's bounds. */
export function checkReplicas(n: number): number {
  if (!Number.isSafeInteger(n) || n < 1 || n > MOST_REPLICAS)
    throw new RangeError(`the replicas of a TAP stream or bucket must be a whole number from 1 to ${MOST_REPLICAS}, not ${n}`);
  return n;
}
