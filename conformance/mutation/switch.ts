/**
 * The TAP_BREAK switch of tap-reference-agent: serves one stdio session behind the mutation layer
 * of the mutant named by TAP_BREAK (conformance/mutation/mutants.ts). Loaded only when the
 * variable is set, so the agent itself carries no mutation.
 */
import type { Agent } from '../../reference/agent/index.ts';
import { createStdioAgentTransport } from '../../reference/transports/stdio.ts';
import type { RawTransport } from '../../reference/transports/transport.ts';
import { fromB64u } from '../mac.ts';
import { mutateTransport } from './layer.ts';
import { MUTANTS } from './mutants.ts';

/** Serves stdin/stdout behind mutant `id`; rejects with a sentence when there is no such mutant. */
export async function serveBrokenStdio(agent: Agent, id: string, maxFrameBytes: number): Promise<void> {
  const mutant = MUTANTS.find((m) => m.id === id);
  if (!mutant) throw new Error(`TAP_BREAK=${id} names no mutant; list them with npx tsx tools/mutation.ts --list`);
  const { TAP_HMAC_KEY_ID: keyId, TAP_HMAC_KEY: key } = process.env;
  const bytes = key ? fromB64u(key) : null;
  const input = mutant.input ? process.stdin.pipe(mutant.input()) : undefined;
  const transport = createStdioAgentTransport({ maxFrameBytes, ...(input ? { input } : {}) }) as unknown as RawTransport;
  const conn = agent.attach(mutateTransport(transport, mutant.make(), keyId && bytes ? { keyId, key: bytes } : undefined), { stdio: true });
  await conn.done;
  const code = typeof mutant.exitCode === 'function' ? mutant.exitCode() : mutant.exitCode;
  if (code !== undefined) process.exit(code);
}
