/**
 * The NATS client, an optional peer dependency (reference/peers.ts): loaded once when this module
 * is, if it is installed. Every module of the NATS binding, the durable queues, the mesh, tapctl
 * and tap-conform takes the client's values from here; without the client, the first call (a
 * connect, always) throws a MissingPeerError that names the npm command, and nothing else changes.
 */
import type * as JetStream from '@nats-io/jetstream';
import type * as Kv from '@nats-io/kv';
import type * as Transport from '@nats-io/transport-node';
import { MissingPeerError, NATS_PEERS, optionalImport } from '../../peers.ts';

const [transport, jetstreamModule, kvModule] = await Promise.all([
  optionalImport(() => import('@nats-io/transport-node')),
  optionalImport(() => import('@nats-io/jetstream')),
  optionalImport(() => import('@nats-io/kv')),
]);

/** True when the NATS client is installed. */
export const natsClientInstalled = transport !== undefined && jetstreamModule !== undefined && kvModule !== undefined;

/** The error of a NATS use without the client. */
export function missingNatsClient(what = 'the NATS binding'): MissingPeerError {
  return new MissingPeerError(what, NATS_PEERS);
}

function need<T>(module: T | undefined): T {
  if (module === undefined) throw missingNatsClient();
  return module;
}

export const connect: typeof Transport.connect = (options) => need(transport).connect(options);
export const headers: typeof Transport.headers = (code, description) => need(transport).headers(code, description);
export const jetstream: typeof JetStream.jetstream = (nc, options) => need(jetstreamModule).jetstream(nc, options);
export const jetstreamManager: typeof JetStream.jetstreamManager = (nc, options) => need(jetstreamModule).jetstreamManager(nc, options);

/** The key-value manager's class; constructing it without the client throws the MissingPeerError. */
export const Kvm: typeof Kv.Kvm =
  kvModule?.Kvm ??
  (class {
    constructor() {
      throw missingNatsClient();
    }
  } as unknown as typeof Kv.Kvm);

// The client's enumerations: read only once a connection exists, which needs the client.
export const AckPolicy = (jetstreamModule?.AckPolicy ?? {}) as typeof JetStream.AckPolicy;
export const DeliverPolicy = (jetstreamModule?.DeliverPolicy ?? {}) as typeof JetStream.DeliverPolicy;
export const DiscardPolicy = (jetstreamModule?.DiscardPolicy ?? {}) as typeof JetStream.DiscardPolicy;
export const RetentionPolicy = (jetstreamModule?.RetentionPolicy ?? {}) as typeof JetStream.RetentionPolicy;
export const StorageType = (jetstreamModule?.StorageType ?? {}) as typeof JetStream.StorageType;
