/** The requester side of a mesh: discovery, routing, fail-over and traces (spec: mesh). */
export { Mesh } from './mesh.ts';
export type { CopyOutcome, MeshOptions, MeshSubmission, MeshSubmitOptions } from './mesh.ts';
export { MeshTask } from './task.ts';
export type { Hop } from './copy-host.ts';
export { ConnectionPool, natsConnector } from './pool.ts';
export type { Connector, NatsConnectorOptions } from './pool.ts';
export type { DiscoveryQuery, Endpoint, MeshEntry, MeshRegistry, RegistryChange } from './registry-view.ts';
export { loadOf, route } from './routing.ts';
export type { Candidate, RoutePolicy, RouteState } from './routing.ts';
export { FrameRecorder, jsonLines, newSpanId, newTraceId } from './trace.ts';
export type { Span, TraceParent, TraceRecord, TraceSink } from './trace.ts';
export { connectMesh } from './connect.ts';
export type { ConnectMeshOptions } from './connect.ts';
export { viewOf } from './registry-view.ts';
export { DEFAULT_BUCKET_LIMITS, openRegistry, REGISTRY_BUCKET } from './registry.ts';
export type {
  BucketLimits,
  Listing,
  ListingBounds,
  OpenRegistryOptions,
  Refusal,
  Registry,
  RegistryChange as RegistryWatchChange,
  RegistryWatch,
} from './registry.ts';
export { refusalOf, signEntry } from './signature.ts';
export { newSigningKey, readSigningKey, readTrustFile, trustOf } from '../trust.ts';
export type { SigningKey, TrustFile } from '../trust.ts';
export type { RegistryEntry, RegistryRecord } from './entry.ts';
export { readTraceRecords, renderTrace, traces, traceView } from './trace-view.ts';
export type { TraceSpan, TraceView } from './trace-view.ts';
export { recordingTransport } from './recording.ts';
export { joinMesh } from './join.ts';
export type { JoinMeshOptions, MeshAgent } from './join.ts';
export type { Membership } from './member.ts';
export { hostAgents, hostCard } from './agent-host.ts';
export type { Host, HostOptions } from './agent-host.ts';
