/** The command line of `npm run bench`, and the counts each mode uses. */
import { parseArgs } from 'node:util';

/** How much work each scenario does: counts, repetitions and time bounds. */
export interface Budget {
  mode: 'full' | 'quick' | 'tiny';
  /** Measured repetitions per figure (after one warm-up). */
  reps: number;
  /** Warm-up calls before the first repetition, and their time bound. */
  warmupCalls: number;
  warmupMs: number;
  /** Calls per sequential repetition, and per in-flight repetition. */
  sequentialCalls: number;
  inflightCalls: number;
  /** Time bound of one repetition. */
  repMs: number;
  /** Output events of the streaming task. */
  streamEvents: number;
  /** Messages per decode repetition. */
  decodeCalls: number;
  /** Open tasks held by the agent (scale). */
  openTasks: number;
  /** Concurrent WebSocket sessions (scale). */
  sessions: number;
  /** Repetitions of the scale figures (each starts a fresh agent). */
  scaleReps: number;
  /** Conformance runs per transport, and the case selection (none: the full suite). */
  harnessReps: number;
  harnessOnly?: string[];
  /** Whether to time a one-case run as the harness's baseline. */
  harnessBaseline: boolean;
  /** How long one conformance run may take before it is stopped. */
  harnessTimeoutMs: number;
  /** No further repetition of the suite starts once the runs of one transport took this long. */
  harnessBudgetMs: number;
  /** Tasks per workspace race, and races. */
  workspaceTasks: number;
  workspaceReps: number;
  /** Agent processes (and as many bare responders) of the mesh throughput row. */
  meshAgents: number;
  /** Warm-up tasks per agent of the mesh throughput rows, before the measured ones (as many calls for the floor). */
  meshWarmPerAgent: number;
  /** How long the mesh warm-up may go on past meshWarmPerAgent while the rate still climbs (0: not at all). */
  meshSettleMs: number;
  /** Simulated agents joined to the registry, their heartbeat and the window their renewals are counted over (scenario 9). */
  registryAgents: number;
  registryHeartbeatMs: number;
  registryWindowMs: number;
}

const FULL: Budget = {
  mode: 'full',
  reps: 5,
  warmupCalls: 3000,
  warmupMs: 2000,
  sequentialCalls: 5000,
  inflightCalls: 20000,
  repMs: 4000,
  streamEvents: 100_000,
  decodeCalls: 200_000,
  openTasks: 10_000,
  sessions: 1000,
  scaleReps: 3,
  harnessReps: 2,
  harnessBaseline: true,
  harnessTimeoutMs: 1_200_000,
  harnessBudgetMs: 300_000,
  workspaceTasks: 1000,
  workspaceReps: 3,
  meshAgents: 20,
  // Measured with 15 an agent (a warm-up of 300 over 20 agents), the agents ran partly unoptimized
  // code and compiled the rest on the clock: 620 µs of agent CPU a task, against 435 µs after 1,000.
  meshWarmPerAgent: 1000,
  // A fleet of 20 processes on two cores still climbs after that: 313 µs of agent CPU a task in the
  // first 10 s after it, 160–197 µs from the fourth 10 s on; so the warm-up goes on until the rate settles.
  meshSettleMs: 60_000,
  registryAgents: 1000,
  registryHeartbeatMs: 5000,
  registryWindowMs: 15_000,
};

const QUICK: Budget = {
  mode: 'quick',
  reps: 2,
  warmupCalls: 100,
  warmupMs: 200,
  sequentialCalls: 200,
  inflightCalls: 640,
  repMs: 400,
  streamEvents: 2000,
  decodeCalls: 5000,
  openTasks: 200,
  sessions: 20,
  scaleReps: 1,
  harnessReps: 1,
  harnessOnly: ['core.handshake.complete', 'core.tasks.accept-echo'],
  harnessBaseline: false,
  harnessTimeoutMs: 60_000,
  harnessBudgetMs: 0,
  workspaceTasks: 40,
  workspaceReps: 1,
  meshAgents: 20,
  meshWarmPerAgent: 200,
  meshSettleMs: 10_000,
  registryAgents: 100,
  registryHeartbeatMs: 500,
  registryWindowMs: 2000,
};

const TINY: Budget = {
  ...QUICK,
  mode: 'tiny',
  reps: 1,
  warmupCalls: 10,
  warmupMs: 50,
  sequentialCalls: 20,
  inflightCalls: 128,
  repMs: 200,
  streamEvents: 200,
  decodeCalls: 500,
  openTasks: 50,
  sessions: 5,
  harnessOnly: ['core.handshake.complete'],
  harnessTimeoutMs: 30_000,
  workspaceTasks: 12,
  meshAgents: 4,
  meshWarmPerAgent: 25,
  meshSettleMs: 0,
  registryAgents: 20,
  registryWindowMs: 1000,
};

export interface Config {
  budget: Budget;
  /** Run only the rows whose id starts with one of these. */
  only: string[];
  /** Where latest.json and latest.md go. */
  out: string;
  /** Also write sample-<date>.json and .md there. */
  sample: boolean;
  help: boolean;
}

export const USAGE = `Usage: npm run bench [-- options]

Measures TAP against the bare floor of each transport and against other agent-protocol SDKs,
and writes bench/results/latest.json and latest.md.

Options:
  --quick          tiny counts: proves every row still runs (under a minute); figures are rough
  --tiny           even smaller counts, for the test suite
  --only <prefix>  run only rows whose id starts with prefix (repeatable), e.g. roundtrip.stdio
  --reps <n>       measured repetitions per figure (default 5 full, 2 quick)
  --out <dir>      where to write latest.json and latest.md (default bench/results)
  --sample         also write sample-<date>.json and .md (a full run to commit)
  -h, --help       show this help`;

/** Parses argv (without node and the script); throws an Error with a one-line message on bad input. */
export function parseCli(argv: string[], defaultOut: string): Config {
  const { values } = parseArgs({
    args: argv,
    allowPositionals: false,
    options: {
      quick: { type: 'boolean' },
      tiny: { type: 'boolean' },
      only: { type: 'string', multiple: true },
      reps: { type: 'string' },
      out: { type: 'string' },
      sample: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  const budget = { ...(values.tiny ? TINY : values.quick ? QUICK : FULL) };
  if (values.reps !== undefined) {
    const reps = Number(values.reps);
    if (!Number.isInteger(reps) || reps < 1 || reps > 100)
      throw new Error(`--reps must be a whole number from 1 to 100, not "${values.reps}"`);
    budget.reps = reps;
  }
  return {
    budget,
    only: values.only ?? [],
    out: values.out ?? defaultOut,
    sample: values.sample ?? false,
    help: values.help ?? false,
  };
}
