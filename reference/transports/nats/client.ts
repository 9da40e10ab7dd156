/**
 * The NATS client, an optional peer dependency (reference/peers.ts), loaded on first use: an
 * agent or requester that never touches NATS never pays for it (about half of the package's
 * import time went to loading it). Every module of the NATS binding, the durable queues, the
 * mesh, tapctl and tap-conform takes the client's values from here; without the client, the
 * first use throws a MissingPeerError that names the npm command, and nothing else changes.
 *
 * The client's packages are CommonJS, so the first use loads them synchronously with require:
 * a connection a user made with their own import of the client (the same module instances)
 * can be handed to the registry or the durable queues before this module ever connected.
 */
import { createRequire } from 'node:module';
import type * as JetStream from '@nats-io/jetstream';
import type * as Kv from '@nats-io/kv';
import type * as Transport from '@nats-io/transport-node';
import { isModuleNotFound, MissingPeerError, NATS_PEERS } from '../../peers.ts';
import type { NatsConnectionLike } from './shape.ts';

/** A connection a caller gave, as the client's type: NatsConnectionLike is that type's shape. */
export function asConnection(nc: NatsConnectionLike): Transport.NatsConnection {
  return nc as Transport.NatsConnection;
}

interface Client {
  transport: typeof Transport;
  jetstream: typeof JetStream;
  kv: typeof Kv;
}

const require = createRequire(import.meta.url);
/** The client once loaded; null when it is not installed. */
let client: Client | null | undefined;

/** An optional peer by require: its module, or undefined when it is not installed (any other failure is thrown). */
function optionalRequire<T>(name: string): T | undefined {
  try {
    return require(name) as T;
  } catch (err) {
    if (isModuleNotFound(err)) return undefined;
    throw err;
  }
}

/** The client, loaded on the first call; null when one of its packages is not installed. */
function loadClient(): Client | null {
  if (client === undefined) {
    const transport = optionalRequire<typeof Transport>('@nats-io/transport-node');
    const jetstream = optionalRequire<typeof JetStream>('@nats-io/jetstream');
    const kv = optionalRequire<typeof Kv>('@nats-io/kv');
    client = transport && jetstream && kv ? { transport, jetstream, kv } : null;
  }
  return client;
}

/** True when the NATS client is installed. */
export function natsClientInstalled(): boolean {
  return loadClient() !== null;
}

/** The error of a NATS use without the client. */
export function missingNatsClient(what = 'the NATS binding'): MissingPeerError {
  return new MissingPeerError(what, NATS_PEERS);
}

function need(): Client {
  const c = loadClient();
  if (c === null) throw missingNatsClient();
  return c;
}

export const connect: typeof Transport.connect = (options) => need().transport.connect(options);
export const headers: typeof Transport.headers = (code, description) => need().transport.headers(code, description);
export const jetstream: typeof JetStream.jetstream = (nc, options) => need().jetstream.jetstream(nc, options);
export const jetstreamManager: typeof JetStream.jetstreamManager = (nc, options) => need().jetstream.jetstreamManager(nc, options);

/** The key-value manager's class, read when constructed; without the client it throws the MissingPeerError. */
export const Kvm: typeof Kv.Kvm = function Kvm(...args: ConstructorParameters<typeof Kv.Kvm>) {
  return new (need().kv.Kvm)(...args);
} as unknown as typeof Kv.Kvm;

/** One of the client's enumerations, whose members are read from the client on use. */
function enumeration<T extends object>(pick: (m: typeof JetStream) => T): T {
  return new Proxy({} as T, { get: (_, member) => (pick(need().jetstream) as Record<PropertyKey, unknown>)[member] });
}
export const AckPolicy = enumeration((m) => m.AckPolicy);
export const DeliverPolicy = enumeration((m) => m.DeliverPolicy);
export const DiscardPolicy = enumeration((m) => m.DiscardPolicy);
export const RetentionPolicy = enumeration((m) => m.RetentionPolicy);
export const StorageType = enumeration((m) => m.StorageType);
