/**
 * The TAP agent a facade serves: reached by a command the facade spawns (stdio) or by a ws:// URL
 * (with reconnect and resume), through the reference client (spec: bindings#stdio, bindings#websocket).
 */
import { connect, connectWs, type ConnectOptions, type TapClient } from '../client/index.ts';
import { spawnStdioTransport } from '../transports/index.ts';

/** Where the TAP agent is: a command and its arguments, or a WebSocket URL. */
export type TapTarget = { command: string; args: readonly string[] } | { url: string };

/** Opens a session with the agent at `target`, as the requester `agentId`; every capability of its card is offered, none required. */
export async function connectTarget(target: TapTarget, agentId: string, options: Partial<ConnectOptions> = {}): Promise<TapClient> {
  const common: ConnectOptions = { agentId, logger: () => {}, ...options };
  if ('url' in target) {
    if (!/^wss?:\/\//.test(target.url))
      throw new Error(`--url ${target.url} is not a WebSocket URL: give ws://host:port/path or wss://..., or a command after --`);
    return connectWs(target.url, common);
  }
  // The child's stderr is this process's: stdout may carry another protocol (MCP over stdio).
  return connect(spawnStdioTransport(target.command, target.args, { stderr: 'inherit', processGroup: true }), common);
}

/** A command line of a bridge subcommand: its options (`--name value`, or `--name` alone) and the TAP agent it serves. */
export interface BridgeArgs {
  options: Map<string, string | true>;
  target?: TapTarget;
  /** The NATS URL of a mesh's registry, when the subcommand takes --mesh and it was given instead of an agent. */
  mesh?: string;
  help: boolean;
}

/** A usage error of a bridge subcommand: what was wrong and what to do. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

/**
 * Reads `args`: the options named in `valued` take a value, those in `flags` none; `--url` names
 * a WebSocket agent and everything after `--` is the command of a stdio agent (one of the two);
 * where `valued` names `--mesh`, a mesh's NATS URL may stand instead of either.
 */
export function parseBridgeArgs(args: readonly string[], valued: readonly string[], flags: readonly string[] = []): BridgeArgs {
  const dash = args.indexOf('--');
  const own = dash < 0 ? args : args.slice(0, dash);
  const command = dash < 0 ? [] : args.slice(dash + 1);
  const options = new Map<string, string | true>();
  let help = false;
  for (let i = 0; i < own.length; i++) {
    const a = own[i]!;
    if (a === '--help' || a === '-h') help = true;
    else if (valued.includes(a) || a === '--url') {
      const v = own[++i];
      if (v === undefined) throw new UsageError(`${a} needs a value`);
      options.set(a, v);
    } else if (flags.includes(a)) options.set(a, true);
    else throw new UsageError(`unknown argument ${a}; the agent's command goes after --`);
  }
  if (help) return { options, help };
  const mesh = options.get('--mesh');
  if (typeof mesh === 'string') {
    if (options.has('--url') || command.length > 0) throw new UsageError('give one of --mesh, --url or a command after --, not two');
    if (!/^(nats|tls):\/\//.test(mesh)) throw new UsageError(`--mesh ${mesh} is not a NATS URL: give nats://host:port`);
    return { options, mesh, help };
  }
  const url = options.get('--url');
  if (typeof url === 'string' && command.length > 0) throw new UsageError('give either --url or a command after --, not both');
  if (typeof url === 'string') return { options, target: { url }, help };
  if (command.length === 0)
    throw new UsageError(
      `no TAP agent: give --url ws://host:port/path${valued.includes('--mesh') ? ', --mesh nats://host:port' : ''}, or its command after -- (e.g. -- tap-reference-agent)`,
    );
  return { options, target: { command: command[0]!, args: command.slice(1) }, help };
}
