/**
 * `tap-bridge mcp [options] -- <MCP server command> [args…]`: serves an MCP server as a TAP agent
 * on any binding of the agent runtime (stdio by default, --listen, --nats, --mesh), with the
 * environment, signals and conformance mode of every agent built on the library
 * (spec: bridge-mcp-server).
 */
import { parseCommandLine, SERVE_USAGE, UsageError } from '../serve/command-line.ts';
import { serveAgent } from '../serve/run.ts';
import { PLAN_MODES, type PlanMode } from './mcp-mapping.ts';

const PROGRAM = 'tap-bridge mcp';

/** The usage text of `tap-bridge mcp`. */
export const MCP_USAGE = `Usage: tap-bridge mcp [options] -- <MCP server command> [args…]

Starts the MCP server over stdio and serves it as a TAP agent: each tool a capability named
"mcp.<tool>", its content and structured content the output, its progress TAP progress, a TAP
cancel an MCP cancellation, a result with isError the capability's own failure. A tool that does
not declare itself read-only or non-destructive waits for an approved plan before it runs.
Example: tap-bridge mcp -- node_modules/.bin/mcp-server-memory

Bridge options:
  --plans MODE        which tool calls wait for an approved plan: destructive (default: tools
                      whose MCP hints do not say readOnlyHint or destructiveHint false), all, or
                      none. MCP hints are the server's own claims, not checked: use all for a
                      server you do not trust
  --agent-id ID       the agent id of the card (default: "mcp." and the server's name)

Agent options:
${SERVE_USAGE}
`;

/** The bridge's own options, beside those of every agent process. */
const BRIDGE_OPTIONS = { plans: { type: 'string' }, 'agent-id': { type: 'string' } } as const;

function fail(message: string, status: number): number {
  process.stderr.write(`${PROGRAM}: ${message}\n${status === 2 ? `Run ${PROGRAM} --help for usage.\n` : ''}`);
  return status;
}

/** Runs `tap-bridge mcp`; resolves with the exit status (0 served and stopped, 1 the server did not start, 2 usage). */
export async function mcpCommand(argv: readonly string[]): Promise<number> {
  const split = argv.indexOf('--');
  const own = split < 0 ? argv : argv.slice(0, split);
  const server = split < 0 ? [] : argv.slice(split + 1);
  let parsed: ReturnType<typeof parseCommandLine>;
  try {
    parsed = parseCommandLine(own, BRIDGE_OPTIONS);
  } catch (err) {
    if (err instanceof UsageError) return fail(err.message, 2);
    throw err;
  }
  if (parsed.serve.help) {
    process.stdout.write(MCP_USAGE);
    return 0;
  }
  const [command, ...args] = server;
  if (command === undefined || command === '')
    return fail('no MCP server command: give it after --, e.g. tap-bridge mcp -- node_modules/.bin/mcp-server-memory', 2);
  const plans = (parsed.values.plans ?? 'destructive') as PlanMode;
  if (!PLAN_MODES.includes(plans)) return fail(`--plans ${String(parsed.values.plans)} is not one of ${PLAN_MODES.join(', ')}`, 2);
  const agentId = typeof parsed.values['agent-id'] === 'string' ? parsed.values['agent-id'] : undefined;
  // Loaded here: `tap-bridge --help` and the other subcommands never load the MCP SDK.
  const { startMcpBridge } = await import('./mcp-agent.ts');
  let bridge: Awaited<ReturnType<typeof startMcpBridge>>;
  try {
    bridge = await startMcpBridge({ server: { command, args }, plans, ...(agentId !== undefined ? { agentId } : {}) });
  } catch (err) {
    return fail((err as Error).message, 1);
  }
  try {
    return await serveAgent(bridge.agent, parsed.serve, PROGRAM, bridge.close);
  } finally {
    await bridge.close();
  }
}
