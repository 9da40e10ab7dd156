/** Input required, TAP 1.1: an agent's request for a value mid-task and its requester's answer (spec: tasks#input-required). */
import { Type, type Static } from '@sinclair/typebox';
import { Identifier } from './common.ts';

/** The JSON Schema (2020-12) an answer must match: an object or a boolean schema. */
export const AnswerSchema = Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Boolean()], {
  description: 'The JSON Schema (2020-12) the answer must match; remote $refs are not fetched.',
});

/** The members of a request: its id (no other request of the task uses it), prompt and answer schema. */
export const InputRequestFields = {
  request_id: Identifier,
  prompt: Type.String({ minLength: 1, maxLength: 65536, description: 'The question, for the person or program that answers.' }),
  schema: AnswerSchema,
};

export const InputRequestPayload = Type.Object(InputRequestFields, {
  $id: 'input.request.payload.schema.json',
  title: 'InputRequestPayload',
  description: 'Payload of input.request (TAP 1.1): the question of a task in input_required and the schema of its answer.',
  since: '1.1',
});
export type InputRequestPayload = Static<typeof InputRequestPayload>;

export const InputResponsePayload = Type.Object(
  {
    request_id: Identifier,
    answer: Type.Unknown({ description: 'The answer, any JSON value, checked against the schema of the request.' }),
  },
  {
    $id: 'input.response.payload.schema.json',
    title: 'InputResponsePayload',
    description: 'Payload of input.response (TAP 1.1): the answer to the pending input request of the task.',
    since: '1.1',
  },
);
export type InputResponsePayload = Static<typeof InputResponsePayload>;

/** The pending request of a task, as a snapshot and a hand-off name it (spec: tasks#input-resume, shutdown#input-shutdown). */
export const PendingInput = (description: string) => Type.Optional(Type.Object(InputRequestFields, { description, since: '1.1' }));
