/**
 * The deadlines of an agent's open tasks behind one timer: the earliest is armed on the clock, the
 * others wait in a heap ordered by deadline. An open task holds a slot in the heap instead of a
 * platform timer and its closure (spec: tasks#deadlines, limits#table-limits).
 */
import type { Clock, TimerHandle } from '../core/platform.ts';

/** What the heap needs of a task: its deadline in ms since the epoch, and where it sits. */
export interface Deadlined {
  deadline: number;
  /** The task's index in the heap while its deadline is armed. */
  deadlineSlot?: number;
}

/** The longest a single timer may wait before it is armed again (the platform's limit is 2^31 − 1 ms). */
const MAX_TIMER_MS = 2_147_000_000;

/** Calls `passed` for each task whose deadline has come, in deadline order, once each. */
export class Deadlines<T extends Deadlined> {
  private readonly heap: T[] = [];
  private timer?: TimerHandle;
  /** The deadline the timer is armed for (Infinity when none is). */
  private armedFor = Number.POSITIVE_INFINITY;

  constructor(
    private readonly clock: Clock,
    private readonly passed: (task: T) => void,
  ) {}

  /** Tasks whose deadline is armed. */
  get size(): number {
    return this.heap.length;
  }

  /** Arms the task's deadline, again if it was armed already (its deadline may have moved). */
  add(task: T): void {
    if (task.deadlineSlot !== undefined) this.take(task.deadlineSlot);
    task.deadlineSlot = this.heap.length;
    this.heap.push(task);
    this.up(task.deadlineSlot);
    this.arm();
  }

  /** Disarms the task's deadline; a task not armed is left as it is. */
  remove(task: T): void {
    if (task.deadlineSlot === undefined || this.heap[task.deadlineSlot] !== task) return;
    this.take(task.deadlineSlot);
    this.arm();
  }

  /** Removes the task at slot `i` from the heap. */
  private take(i: number): void {
    const heap = this.heap;
    const task = heap[i]!;
    task.deadlineSlot = undefined;
    const last = heap.pop()!;
    if (i === heap.length) return;
    heap[i] = last;
    last.deadlineSlot = i;
    this.down(i);
    this.up(last.deadlineSlot);
  }

  /** Sets the timer for the earliest deadline, unless it is set for it already. */
  private arm(): void {
    const first = this.heap[0];
    if (first !== undefined && first.deadline === this.armedFor && this.timer !== undefined) return;
    if (this.timer !== undefined) this.clock.clearTimeout(this.timer);
    this.timer = undefined;
    this.armedFor = Number.POSITIVE_INFINITY;
    if (first === undefined) return;
    this.armedFor = first.deadline;
    const wait = Math.max(0, Math.min(first.deadline - this.clock.now(), MAX_TIMER_MS));
    this.timer = this.clock.setTimeout(() => this.fire(), wait);
  }

  /** The timer went off: every task whose deadline has come is taken out and passed on. */
  private fire(): void {
    this.timer = undefined;
    this.armedFor = Number.POSITIVE_INFINITY;
    const now = this.clock.now();
    while (this.heap.length > 0 && this.heap[0]!.deadline <= now) {
      const task = this.heap[0]!;
      this.take(0);
      this.passed(task);
    }
    this.arm();
  }

  private up(i: number): void {
    const heap = this.heap;
    const task = heap[i]!;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (heap[parent]!.deadline <= task.deadline) break;
      heap[i] = heap[parent]!;
      heap[i]!.deadlineSlot = i;
      i = parent;
    }
    heap[i] = task;
    task.deadlineSlot = i;
  }

  private down(i: number): void {
    const heap = this.heap;
    const task = heap[i]!;
    const n = heap.length;
    for (;;) {
      const left = 2 * i + 1;
      if (left >= n) break;
      const right = left + 1;
      const child = right < n && heap[right]!.deadline < heap[left]!.deadline ? right : left;
      if (heap[child]!.deadline >= task.deadline) break;
      heap[i] = heap[child]!;
      heap[i]!.deadlineSlot = i;
      i = child;
    }
    heap[i] = task;
    task.deadlineSlot = i;
  }
}
