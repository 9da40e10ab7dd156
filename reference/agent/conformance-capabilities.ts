/**
 * The conformance capabilities tap.test.*, exactly as the conformance chapter defines them, for
 * any agent built on this runtime: `withConformanceCapabilities(capabilities)` adds them
 * (spec: conformance#test-capabilities).
 */
import type { Capability } from '../../schemas/src/index.ts';
import askInput from '../../schemas/v1/tap.test.ask.input.schema.json' with { type: 'json' };
import counterInput from '../../schemas/v1/tap.test.counter.input.schema.json' with { type: 'json' };
import failInput from '../../schemas/v1/tap.test.fail.input.schema.json' with { type: 'json' };
import planInput from '../../schemas/v1/tap.test.plan.input.schema.json' with { type: 'json' };
import sleepInput from '../../schemas/v1/tap.test.sleep.input.schema.json' with { type: 'json' };
import streamInput from '../../schemas/v1/tap.test.stream.input.schema.json' with { type: 'json' };
import { anyErrorPayload, errorEntry, TapError } from '../core/index.ts';
import { CapabilityError, type CapabilityDefinition, type Handler, type TaskContext } from './handler.ts';
import type { PlanDraft } from './model.ts';
import type { AgentExtension } from './options.ts';

function capability(name: string, description: string, extra: Partial<Capability>): Capability {
  return {
    name,
    version: '1.0.0',
    description,
    input_formats: ['json'],
    output_formats: ['json'],
    streaming: false,
    side_effects: false,
    ...extra,
  };
}

/** tap.test.echo: output = input. */
const echo: Handler = (input: unknown) => input;

/** tap.test.stream { count, interval_ms?, chunk? }: count output events { index, chunk? }, then output { count }. */
const stream: Handler = async (input: { count: number; interval_ms?: number; chunk?: unknown }, ctx: TaskContext) => {
  for (let index = 0; index < input.count; index++) {
    if (index > 0 && input.interval_ms) await ctx.sleep(input.interval_ms);
    // Awaited: a long stream goes at the pace the peer reads (spec: limits#back-pressure).
    await ctx.output(input.chunk === undefined ? { index } : { index, chunk: input.chunk });
  }
  return { count: input.count };
};

/** tap.test.sleep { ms }: waits, honouring cancel and deadline; output { slept_ms }. Resumes after a restart. */
const sleep: Handler = async (input: { ms: number }, ctx: TaskContext) => {
  const startedAt = typeof ctx.restored?.state.started_at === 'number' ? ctx.restored.state.started_at : ctx.now();
  ctx.checkpoint(
    { started_at: startedAt, ms: input.ms },
    { completed: [], remaining: [`sleep ${input.ms} ms`], resume_hint: 'Sleep for the time that is left.' },
  );
  await ctx.sleep(Math.max(0, startedAt + input.ms - ctx.now()));
  return { slept_ms: input.ms };
};

/**
 * tap.test.fail { code, retryable?, message? }: ends failed with that error; retryable defaults to
 * the registry's. CAPABILITY_FAILED is the capability's own failure, which a 1.0 session carries as
 * INTERNAL_ERROR (spec: conformance#test-capabilities, errors#capability-failed).
 */
const fail: Handler = (input: { code: string; retryable?: boolean; message?: string }) => {
  const message = input.message ?? errorEntry(input.code)?.meaning ?? `failing with ${input.code} as asked`;
  if (input.code === 'CAPABILITY_FAILED') throw new CapabilityError(message, { retryable: input.retryable });
  throw new TapError(anyErrorPayload(input.code, message, undefined, { retryable: input.retryable }));
};

/** A changed copy of a plan that addresses `feedback` (spec: plans#revision). */
function revise(draft: PlanDraft, feedback: string | undefined, n: number): PlanDraft {
  const note = ` (revision ${n}${feedback ? `: ${feedback}` : ''})`;
  return { ...draft, intent: (draft.intent.slice(0, 8192 - note.length) + note).slice(0, 8192) };
}

/**
 * tap.test.plan { plan }: submits the plan; on needs_revision submits a revision; on approval
 * runs each step as a side effect with an output event { step, action } (step 0-based) and ends
 * with output { executed }; a rejection ends it failed PLAN_REJECTED.
 */
const plan: Handler = async (input: { plan: PlanDraft }, ctx: TaskContext) => {
  const restored = ctx.restored?.state as { draft?: PlanDraft; executed?: string[]; approved?: boolean } | undefined;
  let draft = restored?.draft ?? input.plan;
  const executed = [...(restored?.executed ?? [])];
  if (!restored?.approved) {
    let decision = await ctx.submitPlan(draft);
    for (let n = 1; decision.decision === 'needs_revision'; n++) {
      draft = revise(draft, decision.feedback, n);
      ctx.checkpoint({ draft, executed, approved: false });
      decision = await ctx.submitPlan(draft, decision.feedback ?? 'revised as asked');
    }
  }
  const actions = draft.steps.map((s) => s.action);
  ctx.checkpoint({ draft, executed, approved: true }, { completed: [...executed], remaining: actions.slice(executed.length) });
  for (let step = executed.length; step < draft.steps.length; step++) {
    const action = draft.steps[step]!.action;
    await ctx.sideEffect(() => ctx.output({ step, action }));
    executed.push(action);
    ctx.checkpoint({ draft, executed, approved: true }, { completed: [...executed], remaining: actions.slice(executed.length) });
  }
  return { executed };
};

/** tap.test.counter { key }: counts executions per key, durably with a state directory; output { key, count }. */
const counter: Handler = async (input: { key: string }, ctx: TaskContext) => {
  const name = `tap.test.counter:${input.key}`;
  const count = await ctx.sideEffect(() => {
    const next = (typeof ctx.store.get(name) === 'number' ? (ctx.store.get(name) as number) : 0) + 1;
    ctx.store.set(name, next);
    return next;
  });
  return { key: input.key, count };
};

/**
 * tap.test.ask { schema, prompt? } (TAP 1.1): asks for input with that schema and completes with
 * { answer }; in a session of 1.0 the ask ends the task failed CAPABILITY_NOT_SUPPORTED
 * (spec: conformance#test-capabilities-1-1, tasks#input-request).
 */
const ask: Handler = async (input: { schema: Record<string, unknown> | boolean; prompt?: string }, ctx: TaskContext) => {
  const answer = await ctx.askInput({
    prompt: input.prompt ?? 'tap.test.ask: an answer that matches the schema, please',
    schema: input.schema,
  });
  return { answer };
};

/** tap.test.guarded: requires the permission tap.test.write; output { ok: true }. */
const guarded: Handler = () => ({ ok: true });

/** The eight conformance capabilities with their card entries; input forms from schemas/v1 (spec: conformance#input-forms). */
export const CONFORMANCE_CAPABILITIES: Readonly<Record<string, CapabilityDefinition>> = {
  'tap.test.echo': {
    capability: capability('tap.test.echo', 'Returns its input as its output.', {}),
    handler: echo,
  },
  'tap.test.stream': {
    capability: capability('tap.test.stream', 'Sends count output events { index, chunk }, interval_ms apart, then ends with { count }.', {
      streaming: true,
    }),
    inputSchema: streamInput,
    handler: stream,
  },
  'tap.test.sleep': {
    capability: capability('tap.test.sleep', 'Waits ms milliseconds, honouring cancel and deadline, then ends with { slept_ms }.', {}),
    inputSchema: sleepInput,
    handler: sleep,
  },
  'tap.test.fail': {
    capability: capability('tap.test.fail', 'Ends failed with the given error code, retryable flag and message.', {}),
    inputSchema: failInput,
    handler: fail,
  },
  'tap.test.plan': {
    capability: capability(
      'tap.test.plan',
      'Submits the given plan, revises it when asked, and on approval executes its steps, one output event each.',
      {
        streaming: true,
        side_effects: true,
      },
    ),
    inputSchema: planInput,
    handler: plan,
  },
  'tap.test.counter': {
    capability: capability(
      'tap.test.counter',
      'Increments the counter of key and ends with { key, count }: a side effect that must run once per request.',
      {
        side_effects: true,
      },
    ),
    inputSchema: counterInput,
    handler: counter,
  },
  'tap.test.guarded': {
    capability: capability('tap.test.guarded', 'Ends with { ok: true } when the task is granted tap.test.write.', {
      requires_permission: 'tap.test.write',
    }),
    handler: guarded,
  },
  'tap.test.ask': {
    capability: capability('tap.test.ask', 'TAP 1.1: asks its requester for an answer matching schema, then ends with { answer }.', {}),
    inputSchema: askInput,
    handler: ask,
  },
};

/** Adds the conformance capabilities to `capabilities` (spec: conformance#test-capabilities). */
export function withConformanceCapabilities(
  capabilities: Record<string, Handler | CapabilityDefinition> = {},
): Record<string, Handler | CapabilityDefinition> {
  for (const name of Object.keys(CONFORMANCE_CAPABILITIES)) {
    if (name in capabilities) throw new Error(`${name} is reserved for the conformance capabilities`);
  }
  return { ...capabilities, ...CONFORMANCE_CAPABILITIES };
}

/**
 * The conformance extension of TAP 1.1: in a session that uses it, every message of a task's
 * stream carries `metadata["tap-test-stamp"]`, its URI; in any other session, nothing of it
 * (spec: conformance#test-capabilities, handshake#negotiated-extensions).
 */
export const CONFORMANCE_EXTENSION: AgentExtension = {
  uri: 'urn:tap:test:stamp',
  description: 'Marks every message of a task stream with metadata "tap-test-stamp"; for tap-conform.',
  metadata: { 'tap-test-stamp': 'urn:tap:test:stamp' },
};
