/**
 * History checks: does a recorded message stream obey the task rules?
 *
 * `checkHistory` reads the agent→requester stream of one session (across reconnects) and reports
 * every place where it breaks the sequence, state and result rules; `checkTranscript` does the
 * same for a golden transcript (NDJSON lines `{ dir, message }` or `{ dir: "note", text }`) and
 * adds the request/reply rules. Both are pure and report violations as values, never by throwing.
 */
import TASK_STATES from '../../schemas/v1/task-states.json' with { type: 'json' };
import CATALOGUE from '../../schemas/v1/messages.json' with { type: 'json' };

/** The shape of schemas/v1/task-states.json. */
export interface StateTable {
  initial: string;
  states: readonly string[];
  terminal: readonly string[];
  transitions: ReadonlyArray<{ from: string; to: string }>;
}

/** Stable names of the rules a history can break. */
export type HistoryRule =
  | 'message' // an entry is not a message object with a string type
  | 'direction' // a message type sent the wrong way
  | 'message-id-reuse' // one message_id carries two different messages
  | 'sequence-missing' // a task-stream message without task_id or sequence
  | 'sequence-unexpected' // a sequence on a message that is not part of a task stream
  | 'sequence-start' // a task stream that does not open with task.accepted, sequence 1
  | 'sequence-gap' // a sequence skipped
  | 'sequence-duplicate' // a sequence reused by a different message, or going backwards
  | 'transition' // a state change the table does not allow
  | 'state-event' // a state event for accepted, a terminal state, or awaiting_approval
  | 'plan' // plan.submit out of turn, a reused plan_id, a revision of an unknown plan
  | 'after-result' // a task-stream message after the task's result
  | 'result-missing' // a task without its result at the end of a complete history
  | 'snapshot' // a snapshot that contradicts what was already sent
  | 'quiet' // task.accepted or a task.event in the stream of a quiet task
  | 'line' // a malformed transcript line
  | 'reply' // a reply to nothing, a missing or second reply, a reply of the wrong type
  | 'timestamp'; // time going backwards

/** One broken rule: where (the index in the input), which task, which rule, and why. */
export interface Violation {
  index: number;
  task_id?: string;
  rule: HistoryRule;
  message: string;
}

export interface HistoryOptions {
  /** The history is finished: every task must have reached its result. */
  complete?: boolean;
  /**
   * Durable tasks' streams (spec: bindings-nats#event-streams): the queue accepted each task, so its
   * stream opens with the `running` state event at sequence 1 (TAP-NATS-030) rather than with
   * task.accepted, and every redelivery begins again with `running`.
   */
  durable?: boolean;
  /**
   * The tasks requested quiet in a session of 1.1 (spec: tasks#quiet-tasks): each stream opens with
   * whatever message comes first, at sequence 2, holds no task.accepted and no task.event, and
   * announces no state but its end.
   */
  quiet?: ReadonlySet<string>;
}

const TABLE: StateTable = TASK_STATES;

type Msg = Record<string, unknown> & { type: string };
interface Entry {
  direction: string;
  sequenced: boolean;
  replies: readonly string[];
}
const ENTRIES = new Map<string, Entry>(CATALOGUE.messages.map((m) => [m.type, m]));

interface TaskTrack {
  state: string | null; // null when the stream did not open properly
  lastSeq: number;
  bySeq: Map<number, string>;
  ended: boolean;
  plans: Set<string>;
  firstIndex: number;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isMsg = (v: unknown): v is Msg => isObject(v) && typeof v.type === 'string';
const payloadOf = (m: Msg): Record<string, unknown> => (isObject(m.payload) ? m.payload : {});

/**
 * Checks the agent→requester messages of one session (spec: tasks#sequence, tasks#states).
 * A message identical to an earlier one with the same message_id is a replay and is skipped.
 */
export function checkHistory(messages: readonly unknown[], tables: StateTable = TABLE, options: HistoryOptions = {}): Violation[] {
  const out: Violation[] = [];
  const legal = new Set(tables.transitions.map((t) => `${t.from}>${t.to}`));
  const terminal = new Set(tables.terminal);
  const seen = new Map<string, string>();
  const tasks = new Map<string, TaskTrack>();
  const flag = (index: number, rule: HistoryRule, message: string, task_id?: string) =>
    out.push(task_id === undefined ? { index, rule, message } : { index, task_id, rule, message });
  const move = (i: number, id: string, t: TaskTrack, to: string, why: string) => {
    if (t.state !== null && !legal.has(`${t.state}>${to}`))
      flag(i, 'transition', `${why}: ${t.state} → ${to} is not in the state table`, id);
    t.state = to;
  };

  messages.forEach((m, i) => {
    if (!isMsg(m)) return flag(i, 'message', 'not a message object with a string "type"');
    const text = JSON.stringify(m);
    if (typeof m.message_id === 'string') {
      const before = seen.get(m.message_id);
      if (before === text) return; // spec: tasks#replay — a re-sent message is byte-identical and has no second meaning
      if (before !== undefined) return flag(i, 'message-id-reuse', `message_id ${m.message_id} was already used for a different message`);
      seen.set(m.message_id, text);
    }
    const entry = ENTRIES.get(m.type);
    if (entry?.direction === 'requester_to_agent') flag(i, 'direction', `${m.type} is sent by the requester, not the agent`);
    const id = typeof m.task_id === 'string' ? m.task_id : undefined;
    if (!entry?.sequenced) {
      if (m.sequence !== undefined && entry)
        flag(i, 'sequence-unexpected', `${m.type} is not part of a task stream and carries no sequence`, id);
      if (m.type === 'task.snapshot' && id !== undefined) checkSnapshot(i, id, m);
      return;
    }
    const seq = m.sequence;
    if (id === undefined || typeof seq !== 'number' || !Number.isInteger(seq))
      return flag(i, 'sequence-missing', `${m.type} needs task_id and an integer sequence`, id);

    let t = tasks.get(id);
    if (!t) {
      t = { state: null, lastSeq: 0, bySeq: new Map(), ended: false, plans: new Set(), firstIndex: i };
      tasks.set(id, t);
      if (options.quiet?.has(id)) {
        if (seq !== 2) flag(i, 'sequence-start', `the quiet stream of ${id} opens with sequence ${seq}, not 2`, id);
      } else {
        const first = options.durable ? 'the running state event' : 'task.accepted';
        const opens = options.durable ? m.type === 'task.event' && payloadOf(m).state === 'running' : m.type === 'task.accepted';
        if (!opens || seq !== 1)
          flag(i, 'sequence-start', `the stream of ${id} opens with ${m.type} sequence ${seq}, not ${first} sequence 1`, id);
        else if (options.durable) t.state = tables.initial;
      }
    } else if (m.type === 'task.accepted') {
      return flag(i, 'sequence-start', `${id} was already accepted; task.accepted is sent once, as sequence 1`, id);
    }
    if (t.bySeq.has(seq) || seq <= t.lastSeq)
      return flag(i, 'sequence-duplicate', `sequence ${seq} of ${id} comes again as a different message (last was ${t.lastSeq})`, id);
    if (t.lastSeq > 0 && seq > t.lastSeq + 1) flag(i, 'sequence-gap', `sequence of ${id} jumps from ${t.lastSeq} to ${seq}`, id);
    t.bySeq.set(seq, text);
    t.lastSeq = seq;
    if (t.ended) return flag(i, 'after-result', `${m.type} after the result of ${id}`, id);

    const p = payloadOf(m);
    if (options.quiet?.has(id)) {
      // A quiet stream announces no state but its end: only its plans and its result are read.
      if (m.type === 'task.accepted' || m.type === 'task.event') flag(i, 'quiet', `${id} is quiet, yet the agent sent ${m.type}`, id);
      else if (m.type === 'task.result') t.ended = true;
      return;
    }
    switch (m.type) {
      case 'task.accepted':
        t.state = tables.initial;
        break;
      case 'task.event':
        if (p.kind !== 'state') break;
        if (typeof p.state !== 'string') break;
        if (p.state === tables.initial || terminal.has(p.state)) {
          flag(
            i,
            'state-event',
            `a state event announces ${p.state}; that is the job of ${p.state === tables.initial ? 'task.accepted' : 'task.result'}`,
            id,
          );
        } else if (p.state === 'awaiting_approval') {
          flag(i, 'state-event', 'plan.submit is itself the entry into awaiting_approval; no state event announces it', id);
        }
        // A durable task's redelivery begins again with running (TAP-NATS-030).
        if (options.durable && p.state === 'running' && t.state === 'running') break;
        move(i, id, t, p.state, 'state event');
        break;
      case 'plan.submit':
        checkPlan(i, id, t, p);
        break;
      case 'task.result':
        if (typeof p.status === 'string') move(i, id, t, p.status, 'task.result');
        t.ended = true;
        break;
      default:
        break; // task.handoff reports a checkpoint; the state is unchanged
    }
  });

  if (options.complete)
    for (const [id, t] of tasks) if (!t.ended) flag(t.firstIndex, 'result-missing', `${id} never received its task.result`, id);
  return out;

  function checkPlan(i: number, id: string, t: TaskTrack, p: Record<string, unknown>) {
    const plan = isObject(p.plan) ? p.plan : {};
    const planId = typeof plan.plan_id === 'string' ? plan.plan_id : undefined;
    const revisionOf = typeof p.revision_of === 'string' ? p.revision_of : undefined;
    if (planId !== undefined && t.plans.has(planId)) flag(i, 'plan', `plan_id ${planId} was already submitted for ${id}`, id);
    if (revisionOf !== undefined && !t.plans.has(revisionOf))
      flag(i, 'plan', `revision_of names ${revisionOf}, which ${id} never submitted`, id);
    if (t.state === 'awaiting_approval') {
      // spec: plans#revision — a revision stays in awaiting_approval
      if (revisionOf === undefined) flag(i, 'plan', `a new plan while ${id} already awaits a decision must name the plan it revises`, id);
    } else {
      move(i, id, t, 'awaiting_approval', 'plan.submit');
    }
    if (planId !== undefined) t.plans.add(planId);
  }

  function checkSnapshot(i: number, id: string, m: Msg) {
    const t = tasks.get(id);
    const p = payloadOf(m);
    if (!t || typeof p.last_sequence !== 'number') return;
    if (p.last_sequence < t.lastSeq)
      flag(i, 'snapshot', `snapshot of ${id} reports last_sequence ${p.last_sequence}, but ${t.lastSeq} was already sent`, id);
    else if (p.last_sequence === t.lastSeq && t.state !== null && p.state !== t.state)
      flag(i, 'snapshot', `snapshot of ${id} reports state ${String(p.state)}, but the stream says ${t.state}`, id);
  }
}

/** One line of a golden transcript. */
export type TranscriptLine =
  | { dir: 'requester->agent' | 'agent->requester'; message: Record<string, unknown> }
  | { dir: 'note'; text: string };

/** Parses NDJSON transcript text into lines; a line that is not JSON becomes `null` (and a 'line' violation). */
export function parseTranscript(text: string): unknown[] {
  return text
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => {
      try {
        return JSON.parse(l) as unknown;
      } catch {
        return null;
      }
    });
}

const FROM = { 'requester->agent': 'requester_to_agent', 'agent->requester': 'agent_to_requester' } as const;

/**
 * Checks a golden transcript: line shapes, directions, the history rules over the agent's
 * messages (the transcript is complete: every task ends), one direct reply per request
 * (spec: messages#replies), and time never going backwards within a stream. In a session that
 * negotiated 1.1 a quiet task.request that creates its task has no direct reply: its task's first
 * stream message answers it, and its stream is checked as quiet (spec: tasks#quiet-tasks).
 */
export function checkTranscript(lines: readonly unknown[], tables: StateTable = TABLE): Violation[] {
  const out: Violation[] = [];
  const flag = (index: number, rule: HistoryRule, message: string, task_id?: string) =>
    out.push(task_id === undefined ? { index, rule, message } : { index, task_id, rule, message });
  const agentIdx: number[] = [];
  const agentMsgs: unknown[] = [];
  const sent = new Map<string, { index: number; dir: string; type: string }>(); // `${dir} ${message_id}` → first line
  const seenText = new Set<string>();
  const replies = new Map<string, Set<string>>(); // request key → distinct reply texts
  const lastTime = new Map<string, string>(); // stream key → last timestamp
  let version = '1.0'; // the version the latest handshake.ack negotiated
  const requested = new Set<string>(); // task ids of the task.requests seen so far
  const quiet = new Set<string>(); // tasks requested quiet in a session of 1.1
  const quietRequests = new Map<string, string>(); // request key → task id, for the quiet requests that create their task
  const streamed = new Set<string>(); // task ids with at least one sequenced agent message

  lines.forEach((line, i) => {
    if (!isObject(line)) return flag(i, 'line', 'a transcript line is a JSON object');
    if (line.dir === 'note') {
      if (typeof line.text !== 'string') flag(i, 'line', 'a note line carries "text"');
      return;
    }
    if (line.dir !== 'requester->agent' && line.dir !== 'agent->requester')
      return flag(i, 'line', `unknown dir ${JSON.stringify(line.dir)}`);
    const m = line.message;
    if (!isMsg(m)) return flag(i, 'line', 'a message line carries "message", an object with a string "type"');
    const dir = line.dir;
    const other = dir === 'requester->agent' ? 'agent->requester' : 'requester->agent';
    const entry = ENTRIES.get(m.type);
    if (entry && entry.direction !== 'both' && entry.direction !== FROM[dir]) flag(i, 'direction', `${m.type} does not travel ${dir}`);
    if (dir === 'agent->requester') {
      agentIdx.push(i);
      agentMsgs.push(m);
      if (m.type === 'handshake.ack' && typeof payloadOf(m).version === 'string') version = payloadOf(m).version as string;
      if (typeof m.sequence === 'number' && typeof m.task_id === 'string') streamed.add(m.task_id);
    }
    const text = JSON.stringify(m);
    const replay = seenText.has(`${dir} ${text}`);
    seenText.add(`${dir} ${text}`);
    const id = typeof m.message_id === 'string' ? m.message_id : '';
    if (!replay && id && !sent.has(`${dir} ${id}`)) sent.set(`${dir} ${id}`, { index: i, dir, type: m.type });
    if (!replay && dir === 'requester->agent' && m.type === 'task.request' && typeof m.task_id === 'string') {
      // spec: tasks#quiet-tasks, messages#requests-and-replies; `quiet` means nothing in a session of 1.0.
      if (payloadOf(m).quiet === true && version !== '1.0') {
        quiet.add(m.task_id);
        if (!requested.has(m.task_id) && id) quietRequests.set(`${dir} ${id}`, m.task_id);
      }
      requested.add(m.task_id);
    }

    if (typeof m.reply_to === 'string') {
      const req = sent.get(`${other} ${m.reply_to}`);
      if (!req) flag(i, 'reply', `reply_to ${m.reply_to} names no earlier message from the peer`);
      else if (req.type === 'error') flag(i, 'reply', 'nothing ever answers an error');
      else if (m.type !== 'error' && !(ENTRIES.get(req.type)?.replies ?? []).includes(m.type))
        flag(i, 'reply', `${m.type} is not a reply to ${req.type}`);
      else {
        const key = `${other} ${m.reply_to}`;
        const set = replies.get(key) ?? new Set<string>();
        set.add(text);
        replies.set(key, set);
        if (set.size > 1) flag(i, 'reply', `${req.type} ${m.reply_to} already has a different direct reply`);
      }
    }

    if (!replay && typeof m.timestamp === 'string') {
      const stream = typeof m.sequence === 'number' && typeof m.task_id === 'string' ? `task ${m.task_id}` : dir;
      const before = lastTime.get(stream);
      if (before !== undefined && Date.parse(m.timestamp) < Date.parse(before))
        flag(i, 'timestamp', `timestamp ${m.timestamp} is before ${before} in the same stream`);
      lastTime.set(stream, m.timestamp);
    }
  });

  for (const [key, req] of sent) {
    const expects = (ENTRIES.get(req.type)?.replies ?? []).length > 0;
    const quietTask = quietRequests.get(key);
    if (quietTask !== undefined && !replies.has(key)) {
      if (!streamed.has(quietTask))
        flag(
          req.index,
          'reply',
          `the quiet task.request ${key.split(' ')[1]} got neither a direct reply nor a message of its task's stream`,
        );
    } else if (expects && !replies.has(key)) flag(req.index, 'reply', `${req.type} ${key.split(' ')[1]} never got its direct reply`);
  }
  for (const v of checkHistory(agentMsgs, tables, { complete: true, quiet })) out.push({ ...v, index: agentIdx[v.index] ?? v.index });
  return out.sort((a, b) => a.index - b.index);
}
