/**
 * The NATS server a tapctl command talks to, the same way for `tapctl nats …` and `tapctl mesh …`:
 * its `--server` (`-s`) or `--nats` option, else $TAP_NATS_URL, else $NATS_URL (the variable of
 * the nats command-line tool), else the local default. Loads no NATS client.
 */
import { CliError } from './registry.ts';

export const DEFAULT_NATS_URL = 'nats://127.0.0.1:4222';

/** Both names of the server option, in both command groups. */
export const SERVER_OPTIONS = { server: { type: 'string', short: 's' }, nats: { type: 'string' } } as const;

/** The help line of the server option. */
export const SERVER_HELP = `  -s, --server <url>  the NATS server, also --nats <url> (default: $TAP_NATS_URL, else $NATS_URL, else ${DEFAULT_NATS_URL});
                      nats://user:password@host:port gives credentials, a comma-separated list a cluster`;

/** The URL the options and the environment give; two different URLs in --server and --nats are refused. */
export function natsServerUrl(values: { server?: string; nats?: string }, env: NodeJS.ProcessEnv = process.env): string {
  const { server, nats } = values;
  if (server !== undefined && nats !== undefined && server !== nats)
    throw new CliError(`--server ${server} and --nats ${nats} name two servers`, { usage: true, hint: 'Give one of them.' });
  return server ?? nats ?? env.TAP_NATS_URL ?? env.NATS_URL ?? DEFAULT_NATS_URL;
}
