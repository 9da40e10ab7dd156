/**
 * `state.json` as a running agent keeps it: rewritten when what it reports changed, at most once
 * per interval and one write at a time, so that a busy agent does not pay a durable write before
 * and after every claim, and two writes never race to leave the older one in place
 * (spec: bindings-workspace#agents).
 */

export class StateWriter {
  private writing: Promise<void> | null = null;
  private dirty = false;
  private closed = false;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private last = Number.NEGATIVE_INFINITY;

  /**
   * `write` writes the state as it stands when called and never rejects; `everyMs` is the
   * shortest time between two writes.
   */
  constructor(
    private readonly write: () => Promise<void>,
    private readonly everyMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** What the file reports changed: it is rewritten within `everyMs`. */
  touch(): void {
    if (this.closed) return;
    this.dirty = true;
    if (this.writing || this.timer) return;
    const wait = Math.max(0, this.last + this.everyMs - this.now());
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.flush();
    }, wait);
    this.timer.unref?.();
  }

  /** Writes now if a change is pending; resolves once no write is under way. */
  async flush(): Promise<void> {
    while (this.writing) await this.writing;
    if (!this.dirty || this.closed) return;
    this.dirty = false;
    this.last = this.now();
    this.writing = this.write().finally(() => {
      this.writing = null;
      if (this.dirty) this.touch();
    });
    await this.writing;
  }

  /** Stops writing, dropping a pending change, once the write under way (if any) is done: the caller writes the last state. */
  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    while (this.writing) await this.writing;
  }
}
