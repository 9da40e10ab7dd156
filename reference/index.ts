/**
 * TAP 1.1 and 1.0 (tap-agent-protocol): run an agent process from a card and handlers with `runAgent`
 * (or build one to embed with `createAgent`), hand work to one with `connect`
 * or `connectWs`, and run the conformance suite with `runConformance` from
 * `tap-agent-protocol/conformance`. The subpaths `./agent`, `./client`, `./core`, `./transports`
 * and `./workspace` hold the rest of each layer.
 */
export { CapabilityError, createAgent, CONFORMANCE_CAPABILITIES, TaskAborted, withConformanceCapabilities } from './agent/index.ts';
export type { Agent, AgentCard, AgentOptions, CapabilityDefinition, Handler, TaskContext } from './agent/index.ts';
export { runAgent } from './serve/run.ts';
export type { RunAgentOptions } from './serve/run.ts';
export { connect, connectWs, TapClient, TapClientError, TaskHandle } from './client/index.ts';
export type { ConnectOptions, ConnectWsOptions, SubmitOptions } from './client/index.ts';
export { errorPayload, TapError } from './core/index.ts';
export { PACKAGE_NAME, packagePath, packageVersion } from './package.ts';
