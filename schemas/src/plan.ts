/** Plans and their approval (spec: plans). */
import { Type } from '@sinclair/typebox';
import { Count, Identifier } from './common.ts';

export const PlanStep = Type.Object(
  {
    action: Type.String({ minLength: 1, maxLength: 1024, description: 'What the step does.' }),
    target: Type.String({ maxLength: 2048, description: 'What the step acts on.' }),
    expected_output: Type.String({ maxLength: 4096, description: 'What the step should produce.' }),
    reversible: Type.Boolean({ description: 'Whether the step can be undone.' }),
  },
  { title: 'PlanStep', description: 'One step of a plan.' },
);

const planFields = {
  intent: Type.String({ minLength: 1, maxLength: 8192, description: 'What the plan is for.' }),
  steps: Type.Array(PlanStep, { minItems: 1, description: 'The steps, in order.' }),
  rollback: Type.String({ maxLength: 8192, description: "How to undo the plan's effects." }),
  estimated_cost: Type.Object(
    {
      tokens: Type.Optional(Count('Estimated model tokens.')),
      seconds: Type.Optional(Type.Number({ minimum: 0, description: 'Estimated wall time.' })),
    },
    { description: 'The estimated cost.' },
  ),
  risk_level: Type.Union([Type.Literal('low'), Type.Literal('medium'), Type.Literal('high')], { description: 'The risk of the plan.' }),
};

export const Plan = Type.Object(
  { plan_id: Identifier, ...planFields },
  { $id: 'plan.schema.json', title: 'Plan', description: 'A plan the agent asks approval for before any side effect.' },
);

/** A plan as given to the tap.test.plan conformance capability: without plan_id. */
export const PlanDraft = Type.Object(planFields, { title: 'PlanDraft', description: 'A plan without its plan_id.' });

export const PlanSubmitPayload = Type.Object(
  {
    plan: Plan,
    revision_of: Type.Optional(Identifier),
    feedback: Type.Optional(Type.String({ maxLength: 8192, description: 'The feedback this revision addresses.' })),
  },
  {
    $id: 'plan.submit.payload.schema.json',
    title: 'PlanSubmitPayload',
    description: 'Payload of plan.submit; a revision names the plan it revises and the feedback it addresses.',
    dependentRequired: { revision_of: ['feedback'] },
  },
);

export const PlanDecisionPayload = Type.Object(
  {
    plan_id: Identifier,
    decision: Type.Union([Type.Literal('approved'), Type.Literal('rejected'), Type.Literal('needs_revision')], {
      description: 'The decision.',
    }),
    feedback: Type.Optional(Type.String({ maxLength: 8192, description: 'Why, and what to change.' })),
  },
  { $id: 'plan.decision.payload.schema.json', title: 'PlanDecisionPayload', description: 'Payload of plan.decision.' },
);
