/** The requester side of a mesh: discovery, routing, fail-over and traces (spec: mesh). */
export { Mesh } from './mesh.ts';
export type { CopyOutcome, MeshOptions, MeshSubmission, MeshSubmitOptions } from './mesh.ts';
export { MeshTask } from './task.ts';
export type { Hop } from './task.ts';
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
export { readTraceRecords, renderTrace, traces, traceView } from './trace-view.ts';
export type { TraceSpan, TraceView } from './trace-view.ts';
