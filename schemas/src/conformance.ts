/** The input forms of the conformance capabilities tap.test.* (spec: conformance#input-forms). */
import { Type, type Static } from '@sinclair/typebox';
import { PlanDraft } from './plan.ts';
import { whole } from './common.ts';

const MAX_SAFE = 9007199254740991;

export const StreamInput = Type.Object(
  {
    count: Type.Integer({ minimum: 0, maximum: 100000, description: 'How many output events to send.' }),
    interval_ms: Type.Optional(
      Type.Integer({ minimum: 0, maximum: 3600000, description: 'The least time between two output events; default 0.' }),
    ),
    chunk: Type.Optional(Type.Unknown({ description: 'Any JSON value, repeated in every event as chunk.' })),
  },
  { $id: 'tap.test.stream.input.schema.json', title: 'StreamInput', description: 'The input of tap.test.stream.' },
);
export type StreamInput = Static<typeof StreamInput>;

export const SleepInput = Type.Object(
  { ms: Type.Integer({ minimum: 0, maximum: MAX_SAFE, description: 'How long to wait, in milliseconds.' }) },
  { $id: 'tap.test.sleep.input.schema.json', title: 'SleepInput', description: 'The input of tap.test.sleep.' },
);
export type SleepInput = Static<typeof SleepInput>;

export const FailInput = Type.Object(
  {
    code: Type.String({
      pattern: whole('[A-Z][A-Z0-9_]*'),
      minLength: 1,
      maxLength: 64,
      description: 'The error code the task ends with; a code outside the registry is allowed.',
    }),
    retryable: Type.Optional(Type.Boolean({ description: "The error's retryable; default the registry's value for code." })),
    message: Type.Optional(Type.String({ maxLength: 8192, description: "The error's message." })),
  },
  { $id: 'tap.test.fail.input.schema.json', title: 'FailInput', description: 'The input of tap.test.fail.' },
);
export type FailInput = Static<typeof FailInput>;

export const PlanInput = Type.Object(
  { plan: PlanDraft },
  { $id: 'tap.test.plan.input.schema.json', title: 'PlanInput', description: 'The input of tap.test.plan: a plan without plan_id.' },
);
export type PlanInput = Static<typeof PlanInput>;

export const CounterInput = Type.Object(
  { key: Type.String({ maxLength: 256, description: 'The counter to increment.' }) },
  { $id: 'tap.test.counter.input.schema.json', title: 'CounterInput', description: 'The input of tap.test.counter.' },
);
export type CounterInput = Static<typeof CounterInput>;

export const AskInput = Type.Object(
  {
    schema: Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Boolean()], {
      description: 'The JSON Schema (2020-12) of the answer to ask for.',
    }),
    prompt: Type.Optional(
      Type.String({ minLength: 1, maxLength: 8192, description: "The question; one of the agent's choice when absent." }),
    ),
  },
  {
    $id: 'tap.test.ask.input.schema.json',
    title: 'AskInput',
    description: 'The input of tap.test.ask (TAP 1.1): the schema and prompt of the input it asks for.',
    since: '1.1',
  },
);
export type AskInput = Static<typeof AskInput>;

/** The input schemas that the conformance chapter's table defines, each emitted as its own file. */
export const TEST_INPUTS = [StreamInput, SleepInput, FailInput, PlanInput, CounterInput, AskInput];
