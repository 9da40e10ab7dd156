/** Shutdown and farewell payloads (spec: shutdown). */
import { Type } from '@sinclair/typebox';
import { Count } from './common.ts';

export const ShutdownRequestPayload = Type.Object(
  {
    reason: Type.String({ maxLength: 4096, description: 'Why the requester asks the agent to shut down.' }),
    grace_ms: Count('How long the agent has to hand off and say farewell.'),
  },
  { $id: 'shutdown.request.payload.schema.json', title: 'ShutdownRequestPayload', description: 'Payload of shutdown.request.' },
);

export const ShutdownResponsePayload = Type.Object(
  {
    approve: Type.Boolean({ description: 'Whether the agent will shut the session down.' }),
    reason: Type.Optional(Type.String({ maxLength: 4096, description: 'Why, when it does not.' })),
  },
  { $id: 'shutdown.response.payload.schema.json', title: 'ShutdownResponsePayload', description: 'Payload of shutdown.response.' },
);

export const FarewellPayload = Type.Object(
  { reason: Type.String({ maxLength: 4096, description: 'Why the session ends.' }) },
  { $id: 'session.farewell.payload.schema.json', title: 'SessionFarewellPayload', description: 'Payload of session.farewell.' },
);
