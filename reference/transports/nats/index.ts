/** The NATS binding's transport: subjects, one connection's transport, the agent's listener and the requester's connect. */
export type { ConnectNatsOptions } from './connect.ts';
export { connectNatsTransport } from './connect.ts';
export { createNatsListener } from './listener.ts';
export type { NatsListenerOptions, TapNatsListener } from './listener.ts';
export { DEFAULT_KEEPALIVE_MS, MAX_KEEPALIVE_MS, MIN_KEEPALIVE_MS, MISSED_KEEPALIVES } from './keepalive.ts';
export { HEADER_ALLOWANCE, NatsCloseCode, NatsTransport } from './nats-transport.ts';
export type { NatsInboundLog } from './numbering.ts';
export type { NatsTransportOptions } from './nats-transport.ts';
export { DEFAULT_PREFIX, Header, isConnectionId, newConnectionId, openSubject, subjectsOf } from './subjects.ts';
export type { Subjects } from './subjects.ts';
export { LEAN_CLIENT, natsClientOptions, parseNatsUrl } from './url.ts';
export type { NatsAddress, NatsClientOptions } from './url.ts';
