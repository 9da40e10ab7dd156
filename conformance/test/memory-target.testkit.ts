/**
 * Test support: the reference agent in this process on an in-memory transport pair, as a target the
 * harness opens connections to, and the run environment the cases need.
 */
import { CONFORMANCE_EXTENSION, createAgent, withConformanceCapabilities } from '../../reference/agent/index.ts';
import { createMemoryPair } from '../../reference/transports/memory.ts';
import type { RawTransport } from '../../reference/transports/transport.ts';
import type { Case } from '../case.ts';
import type { RunEnv } from '../context.ts';
import { b64u, newKey } from '../mac.ts';
import { DEFAULT_SEED } from '../options.ts';
import { probe } from '../probe.ts';
import { runCases, sharedLoad } from '../runner.ts';
import { type Connection, MAX_TASK_VAR, type OpenOptions, type TargetSpec } from '../target.ts';

/** The key the in-memory agent and the harness share, so that the integrity cases run. */
export const MEMORY_KEY = { keyId: 'mem-key', key: newKey(), peer: 'tap-conform.hmac' };

const agents: ReturnType<typeof createAgent>[] = [];

/**
 * A target whose connections reach one in-memory reference agent; `wrap` may break the agent's
 * side, `limits` replaces the task limits of its card, `versions` the versions it speaks. A connection whose case asks for a shorter
 * max_task_seconds (TAP_MAX_TASK_SECONDS, spec: conformance#case-limits) reaches an agent of that
 * limit, as a stdio agent would be started.
 */
export function memoryTarget(
  wrap: (t: RawTransport) => RawTransport = (t) => t,
  resumeWindowMs?: number,
  limits: {
    max_concurrent_tasks: number;
    max_tasks_per_session?: number;
    max_tasks_per_principal?: number;
    max_task_seconds?: number;
  } = { max_concurrent_tasks: 64 },
  versions?: readonly string[],
): TargetSpec {
  const mine = new Map<number, ReturnType<typeof createAgent>>();
  const agentOf = (maxTaskSeconds: number) => {
    let agent = mine.get(maxTaskSeconds);
    if (agent) return agent;
    agent = createAgent({
      card: {
        agent_id: 'mem.agent',
        name: 'in-memory reference',
        description: 'The reference agent on a memory pair.',
        capabilities: [],
        limits: { max_task_seconds: maxTaskSeconds, max_message_bytes: 1048576, ...limits },
      },
      capabilities: withConformanceCapabilities(),
      extensions: [CONFORMANCE_EXTENSION],
      keys: [{ key_id: MEMORY_KEY.keyId, key: b64u(MEMORY_KEY.key), peer: MEMORY_KEY.peer }],
      // As the reference agent's bin sets it: the floor of the range (spec: limits#heartbeats), so the
      // liveness and late-plan cases get the 1000 ms they propose.
      heartbeatMs: 1_000,
      ...(resumeWindowMs !== undefined ? { resumeWindowMs } : {}),
      ...(versions !== undefined ? { versions } : {}),
    });
    mine.set(maxTaskSeconds, agent);
    agents.push(agent);
    return agent;
  };
  agentOf(3600);
  const open = async (o: OpenOptions): Promise<Connection> => {
    const [harness, far] = createMemoryPair({ schedule: (f) => setImmediate(f) });
    const asked = Number(o.env?.[MAX_TASK_VAR]);
    agentOf(Number.isSafeInteger(asked) && asked > 0 ? asked : 3600).attach(wrap(far));
    return { transport: harness };
  };
  // A target that opens its own connections (conformance/target.ts).
  return { kind: 'memory', display: 'memory://reference', open } satisfies TargetSpec;
}

/** Shuts down every agent memoryTarget started. */
export async function stopMemoryAgents(): Promise<void> {
  await Promise.all(agents.splice(0).map((a) => a.shutdown()));
}

/** The run environment of a memory target, probed. */
export async function memoryEnv(target: TargetSpec, over: Partial<RunEnv> = {}): Promise<RunEnv> {
  const base = {
    target,
    selfId: 'tap-conform',
    key: MEMORY_KEY,
    stepTimeoutMs: 3000,
    timeScale: 1,
    seed: 7,
    runs: 3,
    replay: (id: string, extra?: string) => `tap-conform memory --only ${id}${extra ? ` ${extra}` : ''}`,
    debug: true,
    shared: new Map(),
    ...over,
  };
  const found = await probe(base);
  return { ...base, probe: found, startupMs: 3000 };
}

/**
 * Runs `cases` once against `target` (default: the reference agent in memory, resume window 10 s),
 * with the default seed, `jobs` at a time, and gives every verdict that is not PASS as "<verdict> <id>: <detail>".
 */
export async function notPassingInMemory(
  cases: readonly Case[],
  jobs: number,
  target = memoryTarget(undefined, 10_000),
): Promise<string[]> {
  const env = await memoryEnv(target, { seed: DEFAULT_SEED, runs: 1, stepTimeoutMs: 5000, debug: false });
  const results = await runCases([...cases], { ...env, load: sharedLoad(env)! }, jobs, 1);
  return results.map((r) => `${r.verdict} ${r.id}: ${r.detail}`).filter((r) => !r.startsWith('PASS'));
}
