/**
 * The task state machine, read from schemas/v1/task-states.json; nothing here restates the
 * table (spec: tasks#states).
 */
import type { TaskState } from '../../schemas/src/index.ts';
import table from '../../schemas/v1/task-states.json' with { type: 'json' };

/** The published table: initial state, every state, the terminal set and each legal transition (spec: tasks#transitions). */
export const TASK_TABLE = table as {
  protocol: string;
  description: string;
  initial: TaskState;
  states: TaskState[];
  terminal: TaskState[];
  transitions: { from: TaskState; to: TaskState; trigger: string }[];
};

/** The state every task starts in (spec: tasks#states). */
export const INITIAL_STATE: TaskState = TASK_TABLE.initial;

const states = new Set<string>(TASK_TABLE.states);
const terminal = new Set<string>(TASK_TABLE.terminal);
const next = new Map<string, TaskState[]>(TASK_TABLE.states.map((s) => [s, []]));
for (const t of TASK_TABLE.transitions) next.get(t.from)!.push(t.to);

/** True for a state the table defines (spec: tasks#states). */
export function isTaskState(value: unknown): value is TaskState {
  return typeof value === 'string' && states.has(value);
}

/** True for a terminal state; nothing follows one (spec: tasks#states). */
export function isTerminal(state: string): boolean {
  return terminal.has(state);
}

/** True when the table allows from → to (spec: tasks#transitions). */
export function canTransition(from: string, to: string): boolean {
  return next.get(from)?.includes(to as TaskState) ?? false;
}

/** The states reachable from `from` in one step, in table order; empty for a terminal or unknown state (spec: tasks#transitions). */
export function nextStates(from: string): readonly TaskState[] {
  return next.get(from) ?? [];
}

/** The trigger the table gives for from → to, or undefined when the transition is not legal (spec: tasks#transitions). */
export function transitionTrigger(from: string, to: string): string | undefined {
  return TASK_TABLE.transitions.find((t) => t.from === from && t.to === to)?.trigger;
}
