/**
 * The harness's own judge of an agent's task streams, written from the state table
 * (schemas/v1/task-states.json), the message catalogue (schemas/v1/messages.json) and the spec
 * (spec: tasks#states, tasks#sequences, tasks#result, tasks#status, plans#submission,
 * resume#replay), and sharing no code with the reference it judges.
 *
 * `judgeHistory` reads what the agent sent in one session, in arrival order, and returns every
 * broken rule as a value; it never throws.
 */
import STATE_TABLE from '../../schemas/v1/task-states.json' with { type: 'json' };
import MESSAGE_CATALOGUE from '../../schemas/v1/messages.json' with { type: 'json' };

/** The parts of schemas/v1/task-states.json the judge reads. */
export interface StateTableData {
  initial: string;
  terminal: readonly string[];
  transitions: ReadonlyArray<{ from: string; to: string }>;
}

/** The rules a stream can break; the names are those the harness reports. */
export type StreamRule =
  | 'message'
  | 'direction'
  | 'message-id-reuse'
  | 'sequence-missing'
  | 'sequence-unexpected'
  | 'sequence-start'
  | 'sequence-gap'
  | 'sequence-duplicate'
  | 'transition'
  | 'state-event'
  | 'plan'
  | 'after-result'
  | 'result-missing'
  | 'snapshot'
  | 'quiet';

/** One broken rule: the index of the offending message, its task, the rule and a sentence. */
export interface Finding {
  index: number;
  task_id?: string;
  rule: StreamRule;
  message: string;
}

export interface JudgeOptions {
  /** The state table to judge by (default: schemas/v1/task-states.json). */
  table?: StateTableData;
  /** The session is over: every task that was accepted must have its task.result (spec: tasks#result). */
  complete?: boolean;
  /**
   * The tasks requested quiet in a session of 1.1 (spec: tasks#quiet-tasks): a quiet stream opens
   * at sequence 2 with whatever the task sends first, holds no task.accepted and no task.event,
   * and announces no state but its end.
   */
  quietTasks?: ReadonlySet<string>;
}

type Obj = Record<string, unknown>;
const asObj = (v: unknown): Obj | undefined => (typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Obj) : undefined);
const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

/** What the catalogue says of each message type: who sends it, and whether it belongs to a stream. */
const CATALOGUE = new Map(MESSAGE_CATALOGUE.messages.map((m) => [m.type, { direction: m.direction, sequenced: m.sequenced }]));

/** One task's stream as far as it has been read. */
class Stream {
  /** The state the stream has put the task in; undefined when the stream did not open with task.accepted. */
  state: string | undefined;
  /** The highest sequence read so far (0 before the first). */
  high = 0;
  /** Sequences read so far. */
  readonly seqs = new Set<number>();
  /** Whether task.result has been read. */
  done = false;
  /** The plan_ids submitted so far. */
  readonly plans = new Set<string>();
  constructor(readonly opened: number) {}
}

/** The state machine of the table, as questions. */
class Machine {
  private readonly edges: Set<string>;
  private readonly ends: Set<string>;
  constructor(readonly table: StateTableData) {
    this.edges = new Set(table.transitions.map((t) => JSON.stringify([t.from, t.to])));
    this.ends = new Set(table.terminal);
  }
  allows(from: string, to: string): boolean {
    return this.edges.has(JSON.stringify([from, to]));
  }
  isTerminal(state: string): boolean {
    return this.ends.has(state);
  }
}

/**
 * Judges the agent→requester messages of one session against the stream rules. A message that
 * repeats an earlier one byte for byte under the same message_id is a re-send or a replay and is
 * read once (spec: resume#replay, idempotency#duplicate-messages).
 */
export function judgeHistory(messages: readonly unknown[], options: JudgeOptions = {}): Finding[] {
  const machine = new Machine(options.table ?? STATE_TABLE);
  const findings: Finding[] = [];
  const byId = new Map<string, string>(); // message_id → the JSON text first seen under it
  const streams = new Map<string, Stream>();

  const report = (index: number, rule: StreamRule, message: string, task?: string) => {
    findings.push(task === undefined ? { index, rule, message } : { index, task_id: task, rule, message });
  };

  /** Moves a task to `to`, reporting a move the table does not list (spec: tasks#states). */
  const enter = (index: number, task: string, s: Stream, to: string, by: string) => {
    if (s.state !== undefined && !machine.allows(s.state, to))
      report(index, 'transition', `${by} moves ${task} from ${s.state} to ${to}, a move task-states.json does not list`, task);
    s.state = to;
  };

  for (let index = 0; index < messages.length; index++) {
    const msg = asObj(messages[index]);
    const type = str(msg?.type);
    if (!msg || type === undefined) {
      report(index, 'message', 'this entry is not a message: an object with a string "type" was expected');
      continue;
    }
    const text = JSON.stringify(msg);
    const messageId = str(msg.message_id);
    if (messageId !== undefined) {
      const first = byId.get(messageId);
      if (first === text) continue;
      if (first !== undefined) {
        report(index, 'message-id-reuse', `message_id ${messageId} names two different messages`);
        continue;
      }
      byId.set(messageId, text);
    }

    const kind = CATALOGUE.get(type);
    const task = str(msg.task_id);
    if (kind?.direction === 'requester_to_agent') report(index, 'direction', `the agent sent ${type}, which only a requester sends`);

    if (kind === undefined || !kind.sequenced) {
      if (kind !== undefined && msg.sequence !== undefined)
        report(index, 'sequence-unexpected', `${type} carries a sequence, but it is not part of a task's stream`, task);
      if (type === 'task.snapshot' && task !== undefined) judgeSnapshot(index, task, msg);
      continue;
    }

    const seq = msg.sequence;
    if (task === undefined || typeof seq !== 'number' || !Number.isInteger(seq)) {
      report(index, 'sequence-missing', `${type} belongs to a task's stream and needs a task_id and a whole-number sequence`, task);
      continue;
    }

    let s = streams.get(task);
    if (s === undefined) {
      s = new Stream(index);
      streams.set(task, s);
      if (options.quietTasks?.has(task)) {
        if (seq !== 2) report(index, 'sequence-start', `the first message of the quiet task ${task} carries sequence ${seq}, not 2`, task);
      } else if (type !== 'task.accepted' || seq !== 1)
        report(
          index,
          'sequence-start',
          `the first message of ${task} is ${type} with sequence ${seq}; task.accepted with sequence 1 opens a stream`,
          task,
        );
    } else if (type === 'task.accepted') {
      report(index, 'sequence-start', `a second task.accepted for ${task}; it is sent once, with sequence 1`, task);
      continue;
    }

    if (seq <= s.high || s.seqs.has(seq)) {
      report(index, 'sequence-duplicate', `sequence ${seq} of ${task} again, as a different message, after ${s.high}`, task);
      continue;
    }
    if (s.high !== 0 && seq !== s.high + 1) report(index, 'sequence-gap', `${task} goes from sequence ${s.high} to ${seq}`, task);
    s.seqs.add(seq);
    s.high = seq;

    if (s.done) {
      report(index, 'after-result', `${type} follows the task.result of ${task}`, task);
      continue;
    }
    const payload = asObj(msg.payload) ?? {};
    if (options.quietTasks?.has(task)) {
      // A quiet stream announces no state but its end (spec: tasks#quiet-tasks).
      if (type === 'task.accepted' || type === 'task.event') report(index, 'quiet', `${task} is quiet, yet the agent sent ${type}`, task);
      else if (type === 'task.result') s.done = true;
      continue;
    }
    if (type === 'task.accepted') s.state = machine.table.initial;
    else if (type === 'task.event') judgeEvent(index, task, s, payload);
    else if (type === 'plan.submit') judgePlan(index, task, s, payload);
    else if (type === 'task.result') {
      const status = str(payload.status);
      if (status !== undefined) enter(index, task, s, status, 'task.result');
      s.done = true;
    }
    // task.handoff names a checkpoint and leaves the state as it is (spec: shutdown#handoff).
  }

  if (options.complete)
    for (const [task, s] of streams) if (!s.done) report(s.opened, 'result-missing', `${task} ended without its task.result`, task);
  return findings;

  /** A state event names a non-terminal state entered by a transition of its own (spec: tasks#events). */
  function judgeEvent(index: number, task: string, s: Stream, payload: Obj): void {
    if (payload.kind !== 'state') return;
    const to = str(payload.state);
    if (to === undefined) return;
    if (to === machine.table.initial) report(index, 'state-event', `a state event announces ${to}, which task.accepted announces`, task);
    else if (machine.isTerminal(to))
      report(index, 'state-event', `a state event announces the terminal state ${to}, which task.result announces`, task);
    else if (to === 'awaiting_approval')
      report(index, 'state-event', 'a state event announces awaiting_approval, which plan.submit announces', task);
    enter(index, task, s, to, 'a state event');
  }

  /** plan.submit enters awaiting_approval; a revision names a known plan and keeps the state (spec: plans#submission). */
  function judgePlan(index: number, task: string, s: Stream, payload: Obj): void {
    const planId = str(asObj(payload.plan)?.plan_id);
    const revises = str(payload.revision_of);
    if (planId !== undefined && s.plans.has(planId)) report(index, 'plan', `plan_id ${planId} of ${task} is submitted a second time`, task);
    if (revises !== undefined && !s.plans.has(revises))
      report(index, 'plan', `revision_of ${revises} names no plan ${task} submitted before`, task);
    if (s.state === 'awaiting_approval') {
      if (revises === undefined)
        report(index, 'plan', `${task} already awaits a decision; a further plan must be a revision (revision_of)`, task);
    } else {
      enter(index, task, s, 'awaiting_approval', 'plan.submit');
    }
    if (planId !== undefined) s.plans.add(planId);
  }

  /** A snapshot never reports less than was sent, nor another state at the same position (spec: tasks#status). */
  function judgeSnapshot(index: number, task: string, msg: Obj): void {
    const s = streams.get(task);
    const payload = asObj(msg.payload) ?? {};
    const last = payload.last_sequence;
    if (s === undefined || typeof last !== 'number') return;
    if (last < s.high)
      report(index, 'snapshot', `a snapshot of ${task} says last_sequence ${last}, but sequence ${s.high} was already sent`, task);
    else if (last === s.high && s.state !== undefined && payload.state !== s.state)
      report(index, 'snapshot', `a snapshot of ${task} says ${String(payload.state)}, but its stream says ${s.state}`, task);
  }
}
