/**
 * tap-workspace-agent: the reference agent of the workspace binding. In one process it serves
 * TAP sessions over mailboxes (the reference agent with the conformance capabilities tap.test.*)
 * and works on task records in the conformance phases tap.test.echo, tap.test.sleep,
 * tap.test.fail and tap.test.plan (conformance/workspace/README.md), with leases, heartbeats and a reaper
 * (spec: bindings-workspace). SIGTERM or SIGINT ends every session with its farewell, releases
 * the records it holds back to pending/, and exits 0.
 *
 * Usage: workspace-agent.ts --workspace DIR --agent-id ID [--grace-ms MS] [--poll-ms MS]
 * (TAP_WORKSPACE and TAP_AGENT_ID stand in for the first two; TAP_HMAC_* provide a key).
 */
import { parseArgs } from 'node:util';
import { CONFORMANCE_EXTENSION, createAgent, stderrLogger, withConformanceCapabilities } from '../agent/index.ts';
import { TapError, anyErrorPayload, errorPayload } from '../core/index.ts';
import {
  isIdentifier,
  runWorkspaceAgent,
  serveMailboxes,
  type PhaseContext,
  type PhaseHandler,
  type PhaseOutcome,
  type Plan,
  type Workspace,
} from '../workspace/index.ts';
import type { AgentCard } from '../../schemas/src/index.ts';
import type { Transport } from '../transports/transport.ts';

const USAGE = `Usage: workspace-agent.ts --workspace DIR --agent-id ID [options]

Serves TAP sessions over the mailboxes of a workspace and works on its task records in the
conformance phases tap.test.echo, tap.test.sleep, tap.test.fail and tap.test.plan.

Options:
  --workspace DIR     the workspace (default: $TAP_WORKSPACE)
  --agent-id ID       the agent id (default: $TAP_AGENT_ID)
  --grace-ms MS       grace period on SIGTERM/SIGINT (default 10000)
  --poll-ms MS        rescan period of pending/ and the mailboxes (default 250)
  --heartbeat-ms MS   the heartbeat the agent proposes in its sessions (default 15000)
  --resume-window-ms MS
                      how long a session that went quiet stays resumable (default 300000)
  -h, --help          show this help
`;

function die(message: string): never {
  process.stderr.write(`workspace-agent: ${message}\nRun workspace-agent.ts --help for usage.\n`);
  process.exit(2);
}

function parse(): Omit<WorkspaceAgentSetup, 'phases'> & { workspace: string } {
  let values;
  try {
    ({ values } = parseArgs({
      options: {
        workspace: { type: 'string' },
        'agent-id': { type: 'string' },
        'grace-ms': { type: 'string' },
        'poll-ms': { type: 'string' },
        'heartbeat-ms': { type: 'string' },
        'resume-window-ms': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    }));
  } catch (err) {
    die((err as Error).message);
  }
  if (values.help) {
    process.stdout.write(USAGE);
    process.exit(0);
  }
  const workspace = values.workspace ?? process.env.TAP_WORKSPACE;
  const agentId = values['agent-id'] ?? process.env.TAP_AGENT_ID;
  if (!workspace) die('no workspace: give --workspace DIR or set TAP_WORKSPACE');
  if (!agentId) die('no agent id: give --agent-id ID or set TAP_AGENT_ID');
  if (!isIdentifier(agentId))
    die(`--agent-id ${agentId} is not an identifier: lowercase letters, digits, "_" and "-", in dot-separated segments`);
  const ms = (name: string, v: string | undefined, fallback: number) => {
    if (v === undefined) return fallback;
    const n = Number(v);
    if (!Number.isSafeInteger(n) || n < 0) die(`--${name} ${v} is not a whole number of milliseconds`);
    return n;
  };
  const heartbeatMs = ms('heartbeat-ms', values['heartbeat-ms'], 15_000);
  if (heartbeatMs < 1000 || heartbeatMs > 60_000) die(`--heartbeat-ms ${heartbeatMs} lies outside [1000, 60000] (spec: limits#heartbeats)`);
  const resumeWindowMs = ms('resume-window-ms', values['resume-window-ms'], 300_000);
  if (resumeWindowMs < 1000) die(`--resume-window-ms ${resumeWindowMs} is below 1000`);
  return {
    workspace,
    agentId,
    graceMs: ms('grace-ms', values['grace-ms'], 10_000),
    pollMs: Math.max(10, ms('poll-ms', values['poll-ms'], 250)),
    heartbeatMs,
    resumeWindowMs,
  };
}

function card(agentId: string): AgentCard {
  return {
    agent_id: agentId,
    name: 'TAP reference workspace agent',
    description:
      'The reference agent of the workspace binding: TAP sessions over mailboxes with the conformance capabilities tap.test.*, ' +
      'and task records in the conformance phases tap.test.echo, tap.test.sleep, tap.test.fail and tap.test.plan.',
    capabilities: [],
    limits: { max_concurrent_tasks: 64, max_task_seconds: 3600, max_message_bytes: 1048576, max_tasks_per_session: 32 },
  };
}

function invalid(message: string): TapError {
  return new TapError(errorPayload('INVALID_MESSAGE', message, undefined, { retryable: false }));
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Reads every artifact the record's history names, so that the artifact rules apply to each (spec: bindings-workspace#artifacts). */
async function readHistoryArtifacts(ctx: PhaseContext): Promise<void> {
  for (const e of ctx.record.context.history)
    for (const path of e.artifacts)
      await ctx.readArtifact(path).catch((err: NodeJS.ErrnoException) => {
        if (err.code !== 'ENOENT') throw err;
      });
}

/** Sleeps `ms`, ending early (by throwing) when the phase is interrupted. */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const t = setTimeout(resolve, ms);
    signal.addEventListener(
      'abort',
      () => {
        clearTimeout(t);
        reject(signal.reason);
      },
      { once: true },
    );
  });
}

/**
 * The id of the n-th plan of a task under the claim of `epoch`, `<task_id>.e<epoch>.plan-<n>`: new
 * for every plan (spec: plans#submission) and unique per claim, so a plan file
 * written late by a claimant that lost its claim never carries the id of the current plan.
 */
function planId(taskId: string, epoch: number, n: number): string {
  return `${taskId}.e${epoch}.plan-${n}`;
}

/** The number n of a plan id made by `planId`, or 1. */
function planNumber(id: string): number {
  const m = /\.plan-([0-9]+)$/.exec(id);
  return m ? Number(m[1]) : 1;
}

/**
 * tap.test.plan { plan }: submits the plan (without plan_id) for approval; after needs_revision
 * submits a revision whose intent notes the feedback; once approved runs each step, looking for a
 * cancel sidecar before each, and ends with output { plan_id, executed: [{ step, action }] }
 * (spec: bindings-workspace#approval-and-cancel). A rejection never reaches it: the runner ends
 * the task failed with PLAN_REJECTED.
 */
async function planPhase(ctx: PhaseContext): Promise<PhaseOutcome> {
  const input = ctx.input;
  if (!isObject(input) || !isObject(input.plan))
    throw invalid('tap.test.plan needs the input { plan }, a plan without plan_id (plan.schema.json)');
  await readHistoryArtifacts(ctx);
  const approved = ctx.approvedPlan;
  if (approved) {
    const executed: { step: number; action: string }[] = [];
    for (const [step, s] of approved.steps.entries()) {
      if (await ctx.isCancelled()) break;
      executed.push({ step, action: s.action });
    }
    return { output: { plan_id: approved.plan_id, executed } };
  }
  const { plan_id: _ignored, revision_of: _r, feedback: _f, ...draft } = input.plan as Partial<Plan>;
  if (ctx.plan && ctx.decision?.decision === 'needs_revision') {
    const n = planNumber(ctx.plan.plan_id) + 1;
    const feedback = ctx.decision.feedback ?? 'revised as asked';
    const note = ` (revision ${n - 1}: ${feedback})`;
    const intent = (ctx.plan.intent.slice(0, 8192 - note.length) + note).slice(0, 8192);
    return ctx.submitPlan({
      ...ctx.plan,
      plan_id: planId(ctx.taskId, ctx.epoch, n),
      intent,
      revision_of: ctx.plan.plan_id,
      feedback: feedback.slice(0, 8192),
    });
  }
  return ctx.submitPlan({ ...(draft as Omit<Plan, 'plan_id'>), plan_id: planId(ctx.taskId, ctx.epoch, 1) });
}

/** The conformance phases (conformance/workspace/README.md). */
export const CONFORMANCE_PHASES: Readonly<Record<string, PhaseHandler>> = {
  /** tap.test.echo: the output is the input. */
  'tap.test.echo': async (ctx): Promise<PhaseOutcome> => {
    await readHistoryArtifacts(ctx);
    return { output: ctx.input };
  },
  /** tap.test.sleep { ms }: waits ms, looking for a cancel sidecar meanwhile; output { slept_ms }. */
  'tap.test.sleep': async (ctx): Promise<PhaseOutcome> => {
    const input = ctx.input;
    if (!isObject(input) || !Number.isSafeInteger(input.ms) || (input.ms as number) < 0)
      throw invalid('tap.test.sleep needs the input { ms }, a whole number of milliseconds');
    await readHistoryArtifacts(ctx);
    const ms = input.ms as number;
    const step = 100;
    for (let slept = 0; slept < ms; slept += step) {
      if (await ctx.isCancelled()) break;
      await sleep(Math.min(step, ms - slept), ctx.signal);
    }
    return { output: { slept_ms: ms } };
  },
  /** tap.test.fail { code, retryable?, message? }: ends the phase with that error. */
  'tap.test.fail': async (ctx): Promise<PhaseOutcome> => {
    const input = ctx.input;
    if (!isObject(input) || typeof input.code !== 'string' || !/^[A-Z][A-Z0-9_]*$/.test(input.code))
      throw invalid('tap.test.fail needs the input { code, retryable?, message? }');
    await readHistoryArtifacts(ctx);
    const message = typeof input.message === 'string' ? input.message : `failing with ${input.code} as asked`;
    throw new TapError(
      anyErrorPayload(input.code, message, undefined, typeof input.retryable === 'boolean' ? { retryable: input.retryable } : {}),
    );
  },
  /** tap.test.plan { plan }: plans, waits in awaiting/ for a decision, then runs the approved steps. */
  'tap.test.plan': planPhase,
};

/** How to run a workspace agent: the parsed options, and the parts a variant may replace. */
export interface WorkspaceAgentSetup {
  workspace: string | Workspace;
  agentId: string;
  graceMs: number;
  pollMs: number;
  /** The heartbeat proposed in sessions (default 15 000). */
  heartbeatMs?: number;
  /** How long a quiet session stays resumable (default 300 000). */
  resumeWindowMs?: number;
  /** The phase handlers (default CONFORMANCE_PHASES). */
  phases?: Record<string, PhaseHandler>;
}

/**
 * Runs the agent: sessions over the workspace's mailboxes and its task records in the phases
 * given; SIGTERM or SIGINT stops both and exits 0. Resolves when the agent has stopped.
 */
export async function serveWorkspace(o: WorkspaceAgentSetup): Promise<void> {
  let agent;
  try {
    agent = createAgent({
      card: card(o.agentId),
      capabilities: withConformanceCapabilities(),
      // The conformance extension of 1.1, as the reference agent has it (spec: conformance#conformance-extension).
      extensions: [CONFORMANCE_EXTENSION],
      // Its own signal handling below stops the workspace runner too.
      signals: false,
      shutdownGraceMs: o.graceMs,
      heartbeatMs: o.heartbeatMs ?? 15_000,
      resumeWindowMs: o.resumeWindowMs ?? 300_000,
      logger: stderrLogger,
    });
  } catch (err) {
    die((err as Error).message);
  }
  process.on('unhandledRejection', (err) => stderrLogger('error', `unhandled: ${(err as Error)?.stack ?? String(err)}`));
  process.stderr.on('error', () => {});
  process.stdout.on('error', () => {});
  let runner;
  try {
    runner = await runWorkspaceAgent({
      workspace: o.workspace,
      agentId: o.agentId,
      phases: o.phases ?? { ...CONFORMANCE_PHASES },
      card: agent.card,
      pollMs: o.pollMs,
      concurrency: 8,
      graceMs: Math.min(o.graceMs, 5000),
      logger: stderrLogger,
    });
  } catch (err) {
    die((err as Error).message);
  }
  // Sends still being written when the process ends would be lost: every send is tracked until its file is published.
  const writing = new Set<Promise<void>>();
  const tracked = {
    attach(transport: Transport) {
      const send = transport.send.bind(transport);
      transport.send = (text) => {
        const p = send(text);
        writing.add(p);
        void p.catch(() => {}).finally(() => writing.delete(p));
        return p;
      };
      return agent.attach(transport);
    },
  };
  const mailboxes = serveMailboxes(tracked, { root: runner.workspace.root, agentId: o.agentId, pollMs: o.pollMs });
  let stopping = false;
  // spec: shutdown#signals — every session ends with its farewell, held records go back to pending/, exit 0.
  const onSignal = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    setTimeout(() => process.exit(0), o.graceMs).unref();
    const reason = `the agent received ${signal}`;
    void Promise.allSettled([agent.shutdown(reason), runner.stop(reason)])
      .then(() => Promise.allSettled([...writing]))
      .then(() => mailboxes.close())
      .finally(() => process.exit(0));
  };
  process.on('SIGTERM', () => onSignal('SIGTERM'));
  process.on('SIGINT', () => onSignal('SIGINT'));
  stderrLogger('info', `${o.agentId} works in ${runner.workspace.root}`);
  await runner.stopped;
}

/** Parses the command line (see USAGE). */
export function parseWorkspaceArgs(): { workspace: string; agentId: string; graceMs: number; pollMs: number } {
  return parse();
}

if (process.argv[1] !== undefined && /workspace-agent\.[jt]s$/.test(process.argv[1])) await serveWorkspace(parse());
