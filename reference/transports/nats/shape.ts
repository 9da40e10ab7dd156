/**
 * The shapes of the NATS client's types that the package's declarations name. The client is an
 * optional peer (reference/peers.ts): a declaration that imported its types did not compile where
 * it is not installed (skipLibCheck off), in programs that never use NATS and import only the
 * package's main entry. The binding's code takes these as the client's types (client.ts,
 * asConnection).
 */

/** A NATS connection: a `NatsConnection` of @nats-io/transport-node is one. */
export interface NatsConnectionLike {
  getServer(): string;
  isClosed(): boolean;
  flush(): Promise<void>;
  close(): Promise<void>;
  closed(): Promise<void | Error>;
}

/** Options of a NATS connection the binding opens (authenticator, tls, name): a `Partial<ConnectionOptions>` of @nats-io/transport-node. */
export type NatsConnectOptions = object;
