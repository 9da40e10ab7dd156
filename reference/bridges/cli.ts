/**
 * tap-bridge: the bridges between TAP and MCP or A2A, one subcommand each. The table below is
 * the list of subcommands, one line each; a subcommand's module is loaded only when it runs, so
 * its SDK (an optional peer) is loaded only then.
 */

/** What a subcommand module exports: its runner, with its own arguments; resolves with the exit status. */
export interface SubcommandModule {
  run(args: string[]): Promise<number>;
}

/** One subcommand: its name, its arguments as --help shows them, what it does, its module. */
export type Subcommand = readonly [name: string, synopsis: string, summary: string, load: () => Promise<SubcommandModule>];

/** The subcommands of tap-bridge, one line each. */
export const SUBCOMMANDS: readonly Subcommand[] = [
  [
    'mcp',
    '[--plans destructive|all|none] -- <mcp server command>',
    'serve an MCP server (stdio) as a TAP agent',
    async () => ({ run: (await import('./mcp-command.ts')).mcpCommand }),
  ],
  [
    'mcp-server',
    '(--url ws://... | --mesh nats://... [--capability NAMES] | -- <tap agent command>) [--plans elicit|reject]',
    'serve a TAP agent, or the live agents of a mesh, as an MCP server over stdio',
    () => import('./mcp-host-cli.ts'),
  ],
  [
    'a2a',
    '--port N [--host H] (--url ws://... | --mesh nats://... [--capability NAMES] | -- <tap agent command>)',
    'serve a TAP agent, or the live agents of a mesh, as an A2A server over HTTP',
    () => import('./a2a-cli.ts'),
  ],
];

/** The usage text of tap-bridge. */
export function usage(): string {
  const lines = SUBCOMMANDS.map(([name, synopsis, summary]) => `  tap-bridge ${name} ${synopsis}\n      ${summary}`);
  return `Usage:\n${lines.join('\n')}\n  tap-bridge <subcommand> --help\n`;
}

/** Runs tap-bridge with `argv` (without node and the script); resolves with the exit status (0 done, 1 failed, 2 usage error). */
export async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h') {
    process[name === undefined ? 'stderr' : 'stdout'].write(usage());
    return name === undefined ? 2 : 0;
  }
  const sub = SUBCOMMANDS.find(([n]) => n === name);
  if (sub === undefined) {
    process.stderr.write(
      `tap-bridge: unknown subcommand ${name}; the subcommands are ${SUBCOMMANDS.map(([n]) => n).join(', ')}\n${usage()}`,
    );
    return 2;
  }
  try {
    return await (await sub[3]()).run(rest);
  } catch (err) {
    process.stderr.write(`tap-bridge ${name}: ${(err as Error).message}\n`);
    if (process.env.TAP_BRIDGE_DEBUG) process.stderr.write(`${(err as Error).stack}\n`);
    return 1;
  }
}
