/**
 * One type world: a TypeScript file that assigns the library's types to the types `tapctl gen-types
 * --lang ts` writes and back, without a cast, for every message and payload of the catalogue, the
 * task events, results and snapshots the client hands out, and the agent card. Its
 * `@ts-expect-error` lines hold the other half: a result status, a task state and an event kind are
 * their literal unions, an event of each kind needs the members its kind requires, and a value of
 * one type is not a value of another. tsc must compile it clean; a type widened back to
 * string or unknown leaves an expect-error unused, which tsc reports. Compiled against the built
 * dist/ by test/gen-types.process.test.ts and against the installed package by the tarball test.
 */
import { STREAM_TYPES } from '../../reference/client/types.ts';

/** Where the check imports from: the package's entries and the generated file. */
export interface TypeWorldImports {
  /** The main entry, e.g. 'tap-agent-protocol'. */
  main: string;
  core: string;
  client: string;
  /** The generated file, e.g. './tap-types.ts'. */
  generated: string;
}

/** The check's source; `messageTypes` is the catalogue's list of message types (messages.json). */
export function typeWorldCheck(from: TypeWorldImports, messageTypes: readonly string[]): string {
  const each = messageTypes.map((type, i) =>
    [
      `declare const libPayload${i}: Lib.PayloadOf<'${type}'>;`,
      `declare const genPayload${i}: Gen.PayloadOf<'${type}'>;`,
      `declare const libMessage${i}: Lib.MessageOf<'${type}'>;`,
      `declare const genMessage${i}: Gen.MessageOf<'${type}'>;`,
      `export const payload${i}: [Gen.PayloadOf<'${type}'>, Lib.PayloadOf<'${type}'>] = [libPayload${i}, genPayload${i}];`,
      `export const message${i}: [Gen.MessageOf<'${type}'>, Lib.MessageOf<'${type}'>] = [libMessage${i}, genMessage${i}];`,
    ].join('\n'),
  );
  return `import type { AgentOptions } from '${from.main}';
import type { ResultPayload, SnapshotPayload, StreamMessage, TaskHandle } from '${from.client}';
import type * as Lib from '${from.core}';
import type * as Gen from '${from.generated}';

// Every message type of the catalogue, both ways: the library's payload and message are the generated ones, and back.
${each.join('\n')}

// The union of all messages, both ways.
declare const libAny: Lib.TapMessage;
declare const genAny: Gen.Message;
export const anyMessage: [Gen.Message, Lib.TapMessage] = [libAny, genAny];

// What the client hands out: results, snapshots, the stream of a task and its events.
declare const result: ResultPayload;
declare const genResult: Gen.TaskResultPayload;
export const results: [Gen.TaskResultPayload, ResultPayload] = [result, genResult];
declare const snapshot: SnapshotPayload;
declare const genSnapshot: Gen.TaskSnapshotPayload;
export const snapshots: [Gen.TaskSnapshotPayload, SnapshotPayload] = [snapshot, genSnapshot];
declare const stream: StreamMessage;
declare const genStream: Gen.MessageOf<${[...STREAM_TYPES].map((t) => `'${t}'`).join(' | ')}>;
export const streams: [typeof genStream, StreamMessage] = [stream, genStream];
type LibEvent = TaskHandle['events'] extends AsyncIterable<infer E> ? E : never;
declare const event: LibEvent;
declare const genEvent: Gen.TaskEventMessage;
export const events: [Gen.TaskEventMessage, LibEvent] = [event, genEvent];

// The card an agent is built with, both ways.
declare const card: AgentOptions['card'];
declare const genCard: Gen.AgentCard;
export const cards: [Gen.AgentCard, AgentOptions['card'], Lib.AgentCard] = [card, genCard, genCard];

/** A switch on kind narrows an event of either world to its variant, and covers every kind. */
export function describe(e: LibEvent['payload'] | Gen.TaskEventPayload): string {
  switch (e.kind) {
    case 'state': {
      const entered: 'running' | 'cancelling' | 'input_required' = e.state;
      return entered;
    }
    case 'progress':
      return \`\${e.percent ?? ''} \${e.stage ?? ''} \${e.message ?? ''}\`;
    case 'output':
      return JSON.stringify(e.data);
    case 'log': {
      const line: string = e.message;
      return line;
    }
    default: {
      const none: never = e;
      return none;
    }
  }
}

export const ok: [Lib.PayloadOf<'task.event'>[], Gen.TaskEventPayload[]] = [
  [{ kind: 'state', state: 'running' }, { kind: 'progress', percent: 50 }, { kind: 'output', data: null }, { kind: 'log', message: 'm' }],
  [{ kind: 'state', state: 'cancelling' }, { kind: 'progress', stage: 's' }, { kind: 'output', data: [1] }, { kind: 'log', level: 'warn', message: 'm' }],
];

// Literal unions, not string or unknown.
// @ts-expect-error a result's status is completed, failed, cancelled or timed_out
export const status: ResultPayload['status'] = 'nope';
// @ts-expect-error the same in the generated types
export const genStatus: Gen.TaskResultPayload['status'] = 'nope';
// @ts-expect-error a snapshot's state is a task state
export const state: SnapshotPayload['state'] = 'nope';
// @ts-expect-error a task state is one of task-states.json
export const taskState: Lib.TaskState = 'nope';
// @ts-expect-error an event's kind is state, progress, output or log
export const kind: Lib.PayloadOf<'task.event'>['kind'] = 'nope';
// @ts-expect-error the same in the generated types
export const genKind: Gen.TaskEventPayload['kind'] = 'nope';

// Each kind requires its members (spec: tasks#events).
// @ts-expect-error a state event names the state entered
export const noState: Lib.PayloadOf<'task.event'> = { kind: 'state' };
// @ts-expect-error a log event carries its message
export const noMessage: Lib.PayloadOf<'task.event'> = { kind: 'log', level: 'info' };
// @ts-expect-error the same in the generated types
export const genNoMessage: Gen.TaskEventPayload = { kind: 'log', level: 'info' };
// @ts-expect-error a progress event carries a percent, a stage or a message
export const noProgress: Lib.PayloadOf<'task.event'> = { kind: 'progress' };
// @ts-expect-error the same in the generated types
export const genNoProgress: Gen.TaskEventPayload = { kind: 'progress' };
// @ts-expect-error an output event carries its data
export const noData: Gen.TaskEventPayload = { kind: 'output' };
// @ts-expect-error state events enter running or cancelling only; awaiting_approval is entered by plan.submit
export const planState: Lib.PayloadOf<'task.event'> = { kind: 'state', state: 'awaiting_approval' };

// A value of one type is not a value of another, in either direction.
// @ts-expect-error a result is not a snapshot
export const resultAsSnapshot: Gen.TaskSnapshotPayload = result;
// @ts-expect-error a generated result is not a library event
export const genResultAsEvent: Lib.PayloadOf<'task.event'> = genResult;
declare const noSequence: Omit<Lib.MessageOf<'task.result'>, 'sequence'>;
// @ts-expect-error a task.result carries its sequence (the catalogue: sequenced)
export const unsequenced: Lib.MessageOf<'task.result'> = noSequence;
// @ts-expect-error the same in the generated types
export const genUnsequenced: Gen.MessageOf<'task.result'> = noSequence;
`;
}
