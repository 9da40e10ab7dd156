/** An agent process from a card and handlers: `runAgent`, its command line and its durable queues. */
export { runAgent, serveAgent, agentUsage } from './run.ts';
export type { RunAgentOptions } from './run.ts';
export { parseCommandLine, SERVE_USAGE, UsageError, wholeOption } from './command-line.ts';
export type { ServeOptions } from './command-line.ts';
export { serveDurably } from './durable.ts';
export type { DurableServeOptions } from './durable.ts';
