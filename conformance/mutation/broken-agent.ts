/**
 * The reference agent broken on purpose, for the mutation score of tap-conform (tools/mutation.ts):
 * the agent of tap-reference-agent (reference/agents/reference-options.ts) serving one stdio
 * session behind the mutation layer of the mutant its first argument names
 * (conformance/mutation/mutants.ts). Without a mutant it serves the unbroken agent, the baseline
 * the mutants are compared with. The shipped tap-reference-agent knows nothing of mutants.
 *
 *   node dist/conformance/mutation/broken-agent.js [<mutant>] [--state-dir DIR] [--grace-ms N] [tap-reference-agent's options]
 */
import { pathToFileURL } from 'node:url';
import { type Agent, createAgent } from '../../reference/agent/index.ts';
import { stopOnSignals } from '../../reference/agent/signals.ts';
import { OWN_OPTIONS, ownOptions, referenceAgentOptions } from '../../reference/agents/reference-options.ts';
import { parseCommandLine } from '../../reference/serve/command-line.ts';
import { serveAgent } from '../../reference/serve/run.ts';
import { createStdioAgentTransport } from '../../reference/transports/stdio.ts';
import type { RawTransport } from '../../reference/transports/transport.ts';
import { fromB64u } from '../mac.ts';
import { mutateTransport } from './layer.ts';
import { MUTANTS } from './mutants.ts';

const PROGRAM = 'broken-agent';

/** Serves stdin/stdout behind mutant `id`; rejects with a sentence when there is no such mutant. */
export async function serveBrokenStdio(agent: Agent, id: string, maxFrameBytes: number): Promise<void> {
  const mutant = MUTANTS.find((m) => m.id === id);
  if (!mutant) throw new Error(`${id} names no mutant; list them with npx tsx tools/mutation.ts --list`);
  const { TAP_HMAC_KEY_ID: keyId, TAP_HMAC_KEY: key } = process.env;
  const bytes = key ? fromB64u(key) : null;
  const input = mutant.input ? process.stdin.pipe(mutant.input()) : undefined;
  const transport = createStdioAgentTransport({ maxFrameBytes, ...(input ? { input } : {}) }) as unknown as RawTransport;
  const conn = agent.attach(mutateTransport(transport, mutant.make(), keyId && bytes ? { keyId, key: bytes } : undefined), { stdio: true });
  await conn.done;
  const code = typeof mutant.exitCode === 'function' ? mutant.exitCode() : mutant.exitCode;
  if (code !== undefined) process.exit(code);
}

/** A one-line error for people, then exit 2. */
function die(message: string): never {
  process.stderr.write(`${PROGRAM}: ${message}\n`);
  process.exit(2);
}

async function main(argv: string[]): Promise<number> {
  const mutant = argv[0] !== undefined && !argv[0].startsWith('-') ? argv[0] : undefined;
  let parsed;
  let options;
  try {
    parsed = parseCommandLine(mutant ? argv.slice(1) : argv, OWN_OPTIONS);
    options = referenceAgentOptions(ownOptions(parsed.values));
  } catch (err) {
    die((err as Error).message);
  }
  if (!mutant) return serveAgent(options, parsed.serve, PROGRAM);
  if (parsed.serve.listen || parsed.serve.nats) die('a mutant is served over stdio only: leave out --listen and --nats');
  let agent: Agent;
  try {
    agent = createAgent({ ...options, stateDir: parsed.serve.stateDir, shutdownGraceMs: parsed.serve.graceMs });
  } catch (err) {
    die((err as Error).message);
  }
  const release = stopOnSignals((signal) => agent.shutdown(`the agent received ${signal}`), parsed.serve.graceMs ?? 10_000);
  await serveBrokenStdio(agent, mutant, agent.card.limits.max_message_bytes).catch((err: Error) => die(err.message));
  await agent.shutdown('the session is over');
  release();
  return 0;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) process.exit(await main(process.argv.slice(2)));
