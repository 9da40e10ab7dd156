/**
 * tap-bridge: one command for the bridges between TAP and other protocols. A subcommand is one
 * line of SUBCOMMANDS, loaded only when it runs, so each bridge loads its own SDK and no other.
 */

/** A subcommand: what it does, in one line, and how it runs (resolving with the exit status). */
interface Subcommand {
  about: string;
  run: (argv: readonly string[]) => Promise<number>;
}

/** The subcommands, one a line. */
export const SUBCOMMANDS: Readonly<Record<string, Subcommand>> = {
  mcp: { about: 'serve an MCP server (stdio) as a TAP agent', run: async (argv) => (await import('./mcp-command.ts')).mcpCommand(argv) },
};

/** The usage text of tap-bridge. */
export function bridgeUsage(): string {
  const width = Math.max(...Object.keys(SUBCOMMANDS).map((name) => name.length)) + 2;
  const lines = Object.entries(SUBCOMMANDS).map(([name, { about }]) => `  ${name.padEnd(width)}${about}`);
  return `Usage: tap-bridge <subcommand> [options] [-- command…]\n\nBridges between TAP and other agent protocols.\n\nSubcommands:\n${lines.join('\n')}\n\nRun tap-bridge <subcommand> --help for its options.\n`;
}

/** Runs tap-bridge with `argv` (without node and the script); resolves with the exit status. */
export async function runBridge(argv: readonly string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    process.stdout.write(bridgeUsage());
    return name === undefined ? 2 : 0;
  }
  const subcommand = Object.hasOwn(SUBCOMMANDS, name) ? SUBCOMMANDS[name] : undefined;
  if (!subcommand) {
    process.stderr.write(
      `tap-bridge: no subcommand ${JSON.stringify(name)}; the subcommands are ${Object.keys(SUBCOMMANDS).join(', ')}\nRun tap-bridge --help for usage.\n`,
    );
    return 2;
  }
  return subcommand.run(rest);
}
