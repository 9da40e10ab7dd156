import { describe, expect, it } from 'vitest';
import TASK_TABLE from '../../schemas/v1/task-states.json' with { type: 'json' };
import { checkHistory, checkTranscript, parseTranscript, type HistoryRule } from './history.ts';

let n = 0;
/** An agent→requester message of a task; only the members the checks read. */
const msg = (
  type: string,
  task_id: string | undefined,
  sequence: number | undefined,
  payload: Record<string, unknown> = {},
  extra: Record<string, unknown> = {},
) => ({
  protocol: 'tap/1.0',
  message_id: `a-${++n}`,
  type,
  source: 'tap-reference-agent',
  target: 'tap-conform',
  timestamp: `2025-03-14T09:00:${String(n % 60).padStart(2, '0')}.000Z`,
  ...(task_id === undefined ? {} : { task_id }),
  ...(sequence === undefined ? {} : { sequence }),
  ...extra,
  payload,
});
const accepted = (id: string) => msg('task.accepted', id, 1, { capability: 'tap.test.echo' }, { reply_to: 'c-1' });
const state = (id: string, seq: number, s: string) => msg('task.event', id, seq, { kind: 'state', state: s });
const output = (id: string, seq: number) => msg('task.event', id, seq, { kind: 'output', data: seq });
const result = (id: string, seq: number, status = 'completed') =>
  msg(
    'task.result',
    id,
    seq,
    status === 'completed'
      ? { status, output: 1 }
      : status === 'cancelled'
        ? { status }
        : { status, error: { code: 'INTERNAL_ERROR', message: 'x', retryable: true } },
  );
const submit = (id: string, seq: number, plan_id: string, revision_of?: string) =>
  msg('plan.submit', id, seq, { plan: { plan_id }, ...(revision_of ? { revision_of, feedback: 'f' } : {}) });
const snapshot = (id: string, s: string, last: number) =>
  msg('task.snapshot', id, undefined, { state: s, last_sequence: last }, { reply_to: 'c-2' });

const rules = (v: { rule: HistoryRule }[]) => v.map((x) => x.rule);

describe('checkHistory: good histories (spec: tasks#states)', () => {
  it('accepts accepted → running → output → completed', () => {
    expect(
      checkHistory([accepted('t1'), state('t1', 2, 'running'), output('t1', 3), result('t1', 4)], TASK_TABLE, { complete: true }),
    ).toEqual([]);
  });

  it('accepts a result straight from accepted (cancelled before start, failed, timed_out)', () => {
    for (const s of ['cancelled', 'failed', 'timed_out']) expect(checkHistory([accepted('t1'), result('t1', 2, s)])).toEqual([]);
  });

  it('accepts interleaved tasks, each with its own sequence', () => {
    const h = [
      accepted('a'),
      accepted('b'),
      state('b', 2, 'running'),
      state('a', 2, 'running'),
      result('b', 3),
      output('a', 3),
      result('a', 4),
    ];
    expect(checkHistory(h, TASK_TABLE, { complete: true })).toEqual([]);
  });

  it('accepts a plan cycle: submit, revision in awaiting_approval, approval back to running', () => {
    const h = [
      accepted('p'),
      state('p', 2, 'running'),
      submit('p', 3, 'p.1'),
      submit('p', 4, 'p.2', 'p.1'),
      state('p', 5, 'running'),
      result('p', 6),
    ];
    expect(checkHistory(h)).toEqual([]);
  });

  it('accepts cancel through cancelling, and hand-off before the result', () => {
    const h = [
      accepted('s'),
      state('s', 2, 'running'),
      msg('task.handoff', 's', 3, {}),
      state('s', 4, 'cancelling'),
      result('s', 5, 'cancelled'),
    ];
    expect(checkHistory(h)).toEqual([]);
  });

  it('skips replays: a message identical to an earlier one is not seen twice (spec: tasks#replay)', () => {
    const a = accepted('t1');
    const r = state('t1', 2, 'running');
    const o = output('t1', 3);
    expect(checkHistory([a, r, o, r, o, a, result('t1', 4)])).toEqual([]);
  });

  it('accepts snapshots that agree with the stream, or report messages not yet seen', () => {
    const h = [
      accepted('t1'),
      state('t1', 2, 'running'),
      snapshot('t1', 'running', 2),
      snapshot('t1', 'cancelling', 3),
      state('t1', 3, 'cancelling'),
      result('t1', 4, 'cancelled'),
    ];
    expect(checkHistory(h)).toEqual([]);
  });

  it('ignores errors and non-task messages', () => {
    expect(
      checkHistory([
        msg('handshake.go', undefined, undefined),
        msg('error', 't9', undefined, { code: 'BUSY' }),
        msg('pong', undefined, undefined),
      ]),
    ).toEqual([]);
  });
});

describe('checkHistory: bad histories', () => {
  it('reports a stream that does not open with task.accepted sequence 1', () => {
    expect(rules(checkHistory([state('t1', 1, 'running')]))).toEqual(['sequence-start']);
    expect(rules(checkHistory([msg('task.accepted', 't1', 2, {})]))).toEqual(['sequence-start']);
  });

  it('reports a second task.accepted', () => {
    expect(rules(checkHistory([accepted('t1'), msg('task.accepted', 't1', 2, { capability: 'x.y' })]))).toContain('sequence-start');
  });

  it('reports gaps and duplicates', () => {
    expect(rules(checkHistory([accepted('t1'), state('t1', 3, 'running')]))).toEqual(['sequence-gap']);
    expect(rules(checkHistory([accepted('t1'), state('t1', 2, 'running'), output('t1', 2)]))).toEqual(['sequence-duplicate']);
    expect(rules(checkHistory([accepted('t1'), state('t1', 2, 'running'), output('t1', 3), output('t1', 2)]))).toEqual([
      'sequence-duplicate',
    ]);
  });

  it('reports a message_id reused for a different message', () => {
    const a = accepted('t1');
    const b = { ...state('t1', 2, 'running'), message_id: a.message_id };
    expect(rules(checkHistory([a, b]))).toEqual(['message-id-reuse']);
  });

  it('reports sequences missing from task-stream messages, and present on others', () => {
    expect(rules(checkHistory([accepted('t1'), msg('task.event', 't1', undefined, { kind: 'output', data: 1 })]))).toEqual([
      'sequence-missing',
    ]);
    expect(rules(checkHistory([accepted('t1'), msg('task.snapshot', 't1', 2, { state: 'accepted', last_sequence: 1 })]))).toEqual([
      'sequence-unexpected',
    ]);
  });

  it('reports illegal transitions', () => {
    expect(rules(checkHistory([accepted('t1'), result('t1', 2, 'completed')]))).toEqual(['transition']);
    expect(rules(checkHistory([accepted('t1'), state('t1', 2, 'running'), result('t1', 3, 'cancelled')]))).toEqual(['transition']);
    expect(rules(checkHistory([accepted('t1'), state('t1', 2, 'cancelling')]))).toEqual(['transition']);
    expect(rules(checkHistory([accepted('t1'), state('t1', 2, 'running'), state('t1', 3, 'running')]))).toEqual(['transition']);
  });

  it('reports state events for accepted, terminal states and awaiting_approval (spec: tasks#state-events)', () => {
    expect(rules(checkHistory([accepted('t1'), state('t1', 2, 'accepted')]))).toContain('state-event');
    expect(rules(checkHistory([accepted('t1'), state('t1', 2, 'running'), state('t1', 3, 'completed')]))).toContain('state-event');
    expect(rules(checkHistory([accepted('t1'), state('t1', 2, 'running'), state('t1', 3, 'awaiting_approval')]))).toEqual(['state-event']);
  });

  it('reports anything after the result, including a second result', () => {
    expect(rules(checkHistory([accepted('t1'), state('t1', 2, 'running'), result('t1', 3), output('t1', 4)]))).toEqual(['after-result']);
    expect(rules(checkHistory([accepted('t1'), state('t1', 2, 'running'), result('t1', 3), result('t1', 4)]))).toEqual(['after-result']);
  });

  it('reports a missing result only for a complete history', () => {
    const h = [accepted('t1'), state('t1', 2, 'running')];
    expect(checkHistory(h)).toEqual([]);
    expect(checkHistory(h, TASK_TABLE, { complete: true })).toMatchObject([{ index: 0, task_id: 't1', rule: 'result-missing' }]);
  });

  it('reports plan.submit out of turn, reused plan ids and revisions of unknown plans', () => {
    expect(rules(checkHistory([accepted('p'), submit('p', 2, 'p.1')]))).toEqual(['transition']);
    expect(rules(checkHistory([accepted('p'), state('p', 2, 'running'), submit('p', 3, 'p.1'), submit('p', 4, 'p.2')]))).toEqual(['plan']);
    expect(rules(checkHistory([accepted('p'), state('p', 2, 'running'), submit('p', 3, 'p.1'), submit('p', 4, 'p.1', 'p.1')]))).toEqual([
      'plan',
    ]);
    expect(rules(checkHistory([accepted('p'), state('p', 2, 'running'), submit('p', 3, 'p.1'), submit('p', 4, 'p.2', 'p.0')]))).toEqual([
      'plan',
    ]);
  });

  it('reports snapshots that contradict the stream', () => {
    expect(rules(checkHistory([accepted('t1'), state('t1', 2, 'running'), snapshot('t1', 'running', 1)]))).toEqual(['snapshot']);
    expect(rules(checkHistory([accepted('t1'), state('t1', 2, 'running'), snapshot('t1', 'accepted', 2)]))).toEqual(['snapshot']);
  });

  it('reports messages the agent never sends, and entries that are not messages', () => {
    expect(rules(checkHistory([msg('task.request', 't1', undefined, {})]))).toEqual(['direction']);
    expect(rules(checkHistory([42, null, { type: 1 }]))).toEqual(['message', 'message', 'message']);
  });

  it('gives the index and task of each violation, and uses the table it is given', () => {
    const v = checkHistory([accepted('t1'), state('t1', 2, 'running'), result('t1', 4)]);
    expect(v).toMatchObject([{ index: 2, task_id: 't1', rule: 'sequence-gap' }]);
    const strict = { ...TASK_TABLE, transitions: TASK_TABLE.transitions.filter((t) => t.to !== 'timed_out') };
    expect(rules(checkHistory([accepted('t1'), result('t1', 2, 'timed_out')], strict))).toEqual(['transition']);
  });
});

describe('checkTranscript', () => {
  const R = (type: string, id: string, extra: Record<string, unknown> = {}) => ({
    dir: 'requester->agent',
    message: { type, message_id: id, timestamp: '2025-03-14T09:00:00.000Z', ...extra, payload: {} },
  });
  const A = (m: Record<string, unknown>) => ({ dir: 'agent->requester', message: m });

  it('accepts a request answered once, with its effects', () => {
    const lines = [
      R('task.request', 'c-1', { task_id: 't1' }),
      A({ ...accepted('t1'), reply_to: 'c-1' }),
      { dir: 'note', text: 'time passes' },
      A(state('t1', 2, 'running')),
      A(result('t1', 3)),
    ];
    expect(checkTranscript(lines)).toEqual([]);
  });

  it('reports a request without a reply, a second different reply, and a reply to nothing', () => {
    expect(rules(checkTranscript([R('ping', 'c-1')]))).toEqual(['reply']);
    const pong = (id: string) => A(msg('pong', undefined, undefined, {}, { reply_to: id }));
    expect(rules(checkTranscript([R('ping', 'c-1'), pong('c-1'), pong('c-1')]))).toEqual(['reply']);
    expect(rules(checkTranscript([pong('c-9')]))).toEqual(['reply']);
  });

  it('accepts a re-sent request answered by the byte-identical original reply', () => {
    const req = R('ping', 'c-1');
    const pong = A(msg('pong', undefined, undefined, {}, { reply_to: 'c-1' }));
    expect(checkTranscript([req, pong, req, pong])).toEqual([]);
  });

  it('reports replies of the wrong type and answers to an error', () => {
    expect(rules(checkTranscript([R('ping', 'c-1'), A(msg('handshake.go', undefined, undefined, {}, { reply_to: 'c-1' }))]))).toEqual([
      'reply',
      'reply',
    ]); // wrong type, and so no reply
    expect(rules(checkTranscript([R('error', 'c-1'), A(msg('error', undefined, undefined, {}, { reply_to: 'c-1' }))]))).toEqual(['reply']);
  });

  it('reports bad lines, wrong directions, history violations and time going backwards', () => {
    expect(rules(checkTranscript([{ dir: 'sideways', message: {} }, { dir: 'note' }, 7]))).toEqual(['line', 'line', 'line']);
    expect(rules(checkTranscript([{ dir: 'requester->agent', message: accepted('t1') }]))).toContain('direction');
    expect(rules(checkTranscript([A(state('t1', 1, 'running'))]))).toEqual(expect.arrayContaining(['sequence-start', 'result-missing']));
    const late = A(msg('ping', undefined, undefined, {}, { timestamp: '2025-03-14T10:00:00.000Z' }));
    const early = A(msg('ping', undefined, undefined, {}, { timestamp: '2025-03-14T09:00:00.000Z' }));
    const pongs = [R('pong', 'c-1', { reply_to: late.message.message_id }), R('pong', 'c-2', { reply_to: early.message.message_id })];
    expect(rules(checkTranscript([late, early, ...pongs]))).toEqual(['timestamp']);
  });

  it('maps history violations to transcript line numbers', () => {
    const lines = [
      { dir: 'note', text: 'x' },
      R('task.request', 'c-1', { task_id: 't1' }),
      A({ ...accepted('t1'), reply_to: 'c-1' }),
      A(result('t1', 3)),
    ];
    expect(checkTranscript(lines)).toMatchObject([
      { index: 3, rule: 'sequence-gap' },
      { index: 3, rule: 'transition' },
    ]);
  });

  describe('quiet requests (spec: tasks#quiet-tasks, messages#requests-and-replies)', () => {
    const ack = (version: string) => A(msg('handshake.ack', undefined, undefined, { version }, { reply_to: 'c-0' }));
    const init = R('handshake.init', 'c-0');
    const quietRequest = (id: string, task_id: string) => {
      const line = R('task.request', id, { task_id });
      return { ...line, message: { ...line.message, payload: { capability: 'tap.test.echo', input: 1, quiet: true } } };
    };

    it('accepts, in a session of 1.1, a quiet request answered by its stream alone, opening at sequence 2', () => {
      expect(checkTranscript([init, ack('1.1'), quietRequest('c-1', 'q1'), A(result('q1', 2))])).toEqual([]);
    });

    it('reports a quiet request that got neither a direct reply nor a stream message', () => {
      const v = checkTranscript([init, ack('1.1'), quietRequest('c-1', 'q1')]);
      expect(v).toMatchObject([{ index: 2, rule: 'reply' }]);
      expect(v[0]!.message).toContain('quiet');
    });

    it('reports an acceptance or an event in a quiet stream', () => {
      const lines = [init, ack('1.1'), quietRequest('c-1', 'q1'), A({ ...accepted('q1'), reply_to: 'c-1' }), A(result('q1', 2))];
      expect(rules(checkTranscript(lines))).toContain('quiet');
    });

    it('reads quiet as nothing in a session of 1.0: the request needs its acceptance (TAP-QUIET-105)', () => {
      const v = rules(checkTranscript([init, ack('1.0'), quietRequest('c-1', 'q1'), A(result('q1', 2))]));
      expect(v).toEqual(expect.arrayContaining(['reply', 'sequence-start']));
    });

    it('wants a direct reply to a quiet request that repeats an existing task under a new message_id', () => {
      const lines = [init, ack('1.1'), quietRequest('c-1', 'q1'), A(result('q1', 2)), quietRequest('c-2', 'q1')];
      expect(checkTranscript(lines)).toMatchObject([{ index: 4, rule: 'reply' }]);
    });
  });

  it('parses NDJSON text, keeping unreadable lines as null', () => {
    expect(parseTranscript('{"dir":"note","text":"a"}\n\nnot json\n')).toEqual([{ dir: 'note', text: 'a' }, null]);
  });
});

describe('checkHistory of durable tasks (spec: bindings-nats#event-streams)', () => {
  const durable = { complete: true, durable: true };
  it('accepts a stream that opens with running at sequence 1 and a redelivery that begins again with running (TAP-NATS-030)', () => {
    expect(
      checkHistory([state('t1', 1, 'running'), state('t1', 2, 'running'), output('t1', 3), result('t1', 4)], TASK_TABLE, durable),
    ).toEqual([]);
  });
  it('refuses a durable stream that opens with task.accepted, and a session stream that opens with running', () => {
    expect(rules(checkHistory([accepted('t1'), result('t1', 2)], TASK_TABLE, durable))).toContain('sequence-start');
    expect(rules(checkHistory([state('t1', 1, 'running'), result('t1', 2)], TASK_TABLE, { complete: true }))).toContain('sequence-start');
  });
  it('still finds gaps and results missing in a durable stream', () => {
    expect(rules(checkHistory([state('t1', 1, 'running'), result('t1', 3)], TASK_TABLE, durable))).toEqual(['sequence-gap']);
    expect(rules(checkHistory([state('t1', 1, 'running')], TASK_TABLE, durable))).toEqual(['result-missing']);
  });
});
