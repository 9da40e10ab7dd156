/** Test support for the A2A facade: user messages as @a2a-js/sdk's client sends them, and what a stream's events carry. */
import { Role, type Message, type StreamResponse } from '@a2a-js/sdk';
import { dataPart } from './a2a-mapping.ts';

let ids = 0;

/** A user message: a DataPart { capability, input }, or the given parts; a new messageId each time. */
export function userMessage(capability: string, input: unknown, extra: Partial<Message> = {}): Message {
  return {
    messageId: `m-${++ids}-${Date.now()}`,
    contextId: '',
    taskId: '',
    role: Role.ROLE_USER,
    parts: [dataPart({ capability, input })],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
    ...extra,
  };
}

/** The "tap/sequence" and `index` of each output artifact event of a stream (tap.test.stream's outputs). */
export function outputEvents(events: StreamResponse[]): Array<[number, number]> {
  return events.flatMap((e) => {
    const p = e.payload;
    if (p?.$case !== 'artifactUpdate' || p.value.artifact?.name !== 'output') return [];
    const c = p.value.artifact.parts[0]?.content;
    return c?.$case === 'data' ? [[p.value.metadata?.['tap/sequence'] as number, (c.value as { index: number }).index]] : [];
  });
}
