/** Mutants that break the rules of spec/1.0/bindings-stdio.md (spec: bindings-stdio). */
import { Transform } from 'node:stream';
import { is, join, out, refuse } from '../operators.ts';
import { completedInstead, type Row } from '../rows.ts';

const FATAL = { sent: false };

/** A stdin filter that turns each line holding only white space into a line the agent cannot parse. */
function blankLinesAsFrames(): Transform {
  let rest = '';
  return new Transform({
    transform(chunk: Buffer, _enc, done) {
      const lines = (rest + chunk.toString('utf8')).split('\n');
      rest = lines.pop() ?? '';
      done(null, lines.map((l) => (l.trim() === '' ? 'blank\n' : `${l}\n`)).join(''));
    },
    flush(done) {
      done(null, rest);
    },
  });
}

export const rows: Row[] = [
  [
    'TAP-STDIO-001:pretty-printed',
    'task.result is written over several lines',
    () => out(is('task.result'), (m) => JSON.stringify(m, null, 2)),
    undefined,
    { binding: 'stdio' },
  ],
  [
    'TAP-STDIO-003:log-on-stdout',
    'a log line is written to stdout before each pong',
    () => out(is('pong'), (m) => ['agent: answering a ping', m]),
    undefined,
    { binding: 'stdio' },
  ],
  [
    'TAP-STDIO-005:session-lost-completed',
    'tasks of a lost peer end completed',
    completedInstead('SESSION_LOST'),
    undefined,
    { binding: 'stdio' },
  ],
  ['TAP-STDIO-006:exit-1', 'the agent exits 1 after an orderly session', () => ({}), undefined, { binding: 'stdio', exitCode: 1 }],
  [
    'TAP-STDIO-002:blank-line-read',
    'a line holding only white space is read as a frame',
    () => ({}),
    undefined,
    { binding: 'stdio', input: () => blankLinesAsFrames() },
  ],
  [
    'TAP-STDIO-040:exit-1-after-fatal',
    'the agent exits 1 after a session that ended with a fatal error',
    () =>
      out(
        (m) => m.type === 'error' && m.payload?.fatal === true,
        () => {
          FATAL.sent = true;
          return undefined;
        },
      ),
    undefined,
    { binding: 'stdio', exitCode: () => (FATAL.sent ? 1 : undefined) },
  ],
  [
    'TAP-STDIO-041:forgets-finished',
    "a finished task's stream is forgotten at its end: a task.resume of it is answered UNKNOWN_TASK",
    () => {
      const ended = new Set<string>();
      return join(
        out(is('task.result'), (m) => {
          if (typeof m.task_id === 'string') ended.add(m.task_id);
          return undefined;
        }),
        refuse((m) => m.type === 'task.resume' && typeof m.task_id === 'string' && ended.has(m.task_id), 'UNKNOWN_TASK'),
      );
    },
    undefined,
    { binding: 'stdio' },
  ],
];
