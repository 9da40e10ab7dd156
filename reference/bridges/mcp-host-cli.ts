/** tap-bridge mcp-server: serves a TAP agent as an MCP server on stdin and stdout until stdin ends (spec: bridge-mcp-host). */
import { serveMcpHostOverStdio } from './mcp-host.ts';
import { openServed, type MeshTarget } from './mesh-target.ts';
import type { TapClient } from '../client/index.ts';
import { type BridgeArgs, parseBridgeArgs, UsageError } from './tap-target.ts';

const HELP = `Usage: tap-bridge mcp-server (--url ws://host:port/path | --mesh nats://host:port [--capability NAME,...] | -- <tap agent command> [args...]) [--plans elicit|reject]

Serves a TAP agent as an MCP server over stdio: an MCP host (a desktop app, an IDE, the MCP SDK's
client) spawns this command and sees each capability of the agent's card as a tool.

  --url URL        reach the agent over WebSocket (with reconnect and resume)
  --mesh URL       serve the mesh whose registry is on the NATS server at URL: the tools are the
                   capabilities of its live agents, each call a mesh task sent to one of them
  --capability NAMES
                   with --mesh, only these capabilities (comma-separated) are tools
  -- COMMAND ...   spawn the agent and speak TAP over its stdio
  --plans MODE     elicit (default): a plan waiting for approval is asked of the MCP user by
                   elicitation; reject: every plan is rejected

Over --mesh an input request is not carried to the MCP client: the call is cancelled and says so.

Progress and output events become MCP progress notifications (when the call has a progressToken),
log events logging messages, notifications/cancelled a TAP cancel, input requests elicitations.
A host with MCP tasks support may call any tool as an MCP task (polled every second; tasks/cancel
cancels the TAP task; an input request is an elicitation tied to the task, input_required).
stdout carries MCP only; messages for people go to stderr. The mapping: spec/1.1 "A TAP agent as
an MCP server".
`;

/** Runs the subcommand with its own arguments; resolves with the exit status. */
export async function run(args: string[]): Promise<number> {
  let parsed: BridgeArgs;
  try {
    parsed = parseBridgeArgs(args, ['--plans', '--mesh', '--capability']);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    process.stderr.write(`tap-bridge mcp-server: ${err.message}\nRun tap-bridge mcp-server --help for usage.\n`);
    return 2;
  }
  if (parsed.help || (parsed.target === undefined && parsed.mesh === undefined)) {
    process.stdout.write(HELP);
    return 0;
  }
  const plans = parsed.options.get('--plans') ?? 'elicit';
  if (plans !== 'elicit' && plans !== 'reject') {
    process.stderr.write(`tap-bridge mcp-server: --plans ${String(plans)} is not a mode; give elicit or reject\n`);
    return 2;
  }
  let client: TapClient | MeshTarget;
  try {
    client = await openServed(
      parsed,
      'tap-bridge-mcp-server',
      (names) => `tap-bridge mcp-server: no live agent in the mesh offers ${names} yet; the tool appears once one joins`,
    );
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    process.stderr.write(`tap-bridge mcp-server: ${err.message}\n`);
    return 2;
  }
  const host = await serveMcpHostOverStdio(client, { plans });
  const status = await new Promise<number>((resolve) => {
    process.stdin.once('end', () => resolve(0));
    process.stdin.once('close', () => resolve(0));
    process.once('SIGINT', () => resolve(0));
    process.once('SIGTERM', () => resolve(0));
    if ('on' in client)
      client.on('closed', () => {
        process.stderr.write('tap-bridge mcp-server: the TAP agent closed the session; stopping\n');
        resolve(1);
      });
  });
  await host.close().catch(() => {});
  await ('on' in client ? client.close('the MCP client went away') : client.close()).catch(() => {});
  return status;
}
