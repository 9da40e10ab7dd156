/**
 * The harness peer: a requester speaking TAP over one Transport connection. It records the wire
 * transcript, checks every frame in both directions against schemas/v1 (saying whose fault a
 * violation is), answers pings, and turns a missing reply into a diagnosis: the agent crashed,
 * hung, or is ignoring the message (spec: conformance#peer).
 */
import type { CloseInfo, InboundFrame, RawTransport } from '../reference/transports/transport.ts';
import type { ChildExit } from '../reference/transports/stdio-child.ts';
import { inspectFrame, type Inspected } from './inspect.ts';
import type { TaskLedger } from './load.ts';
import { collectUntilResult, handshake, request, type Established, type HandshakeOptions, type RequestOptions } from './steps.ts';
import { signMessage } from './mac.ts';
import { describeIssues, validateMessage } from './schemas.ts';
import type { IdSource, SessionState, Wire } from './session-state.ts';
import { cut, type Transcript } from './transcript.ts';
import { fail, got, miss, type Got, type Outcome } from './verdict.ts';

/** One message received from the agent. */
export interface Received {
  /** Position among everything this case received, across connections. */
  index: number;
  /** Milliseconds since the case started. */
  at: number;
  conn: number;
  text: string;
  msg: Wire;
  /** True if it repeats, byte for byte, a message received before. */
  resent: boolean;
  /** The session the connection belongs to. */
  session: SessionState;
}

/** A spec violation seen during a case, and who committed it. */
export interface Violation {
  by: 'agent' | 'harness';
  text: string;
  at: number;
}

/** Everything a case observed, shared by all its connections. */
export class Findings {
  readonly violations: Violation[] = [];
  readonly received: Received[] = [];
  /** Agent frames that were not JSON at all. */
  nonProtocol = 0;
  /** Why a BUSY the agent answered may have been the suite's own load (spec: limits#concurrency). */
  readonly busyByLoad: string[] = [];
}

/** Where a peer counts the tasks it asks for: the run's ledger, under its case run. */
export interface TaskCount {
  ledger: TaskLedger;
  owner: string;
  /** The case fills the agent's limits on purpose: only other cases' load explains a BUSY. */
  fillsLimits?: boolean;
}

export interface PeerOptions {
  transport: RawTransport;
  binding: 'stdio' | 'websocket' | 'nats';
  state: SessionState;
  transcript: Transcript;
  findings: Findings;
  ids: IdSource;
  /** Connection number within the case. */
  conn: number;
  stepTimeoutMs: number;
  /** How long the first reply of a connection may take: the agent may still be starting. */
  startupMs?: number;
  timeScale: number;
  /** For a spawned agent: resolves when the process exits. */
  exited?: Promise<ChildExit>;
  /** Counts the tasks the harness holds at the agent. */
  tasks?: TaskCount;
}

/** Options of one send. */
export interface SendOptions {
  /** Sign under the session's integrity (default: when integrity is in force). */
  sign?: boolean;
  /** The harness sends this invalid on purpose: say why, and skip the outbound schema check. */
  deliberate?: string;
}

type Waiter = {
  pred: (r: Received) => boolean;
  since: number;
  resolve: (r: Received | undefined) => void;
  /** Restarts the wait with its own timeout, once the agent has been heard from. */
  rearm?: () => void;
};

/** "no <what>" without a doubled article: "a reply to ping x" becomes "no reply to ping x". */
export function none(what: string): string {
  return `no ${what.replace(/^(?:a|an|the) /, '')}`;
}

/** Milliseconds as a wall clock reading in RFC 3339 UTC. */
export function rfc3339(ms: number = Date.now()): string {
  return new Date(ms).toISOString();
}

/** A requester connection driven by a case. */
export class Peer {
  readonly state: SessionState;
  readonly ids: IdSource;
  readonly conn: number;
  readonly binding: 'stdio' | 'websocket' | 'nats';
  readonly stepTimeoutMs: number;
  readonly timeScale: number;
  /** Whether the harness answers the agent's pings (a liveness case turns this off). */
  answerPings = true;
  /** Set once the connection has closed (or the process exited). */
  closed: (CloseInfo & { at: number; exit?: ChildExit }) | undefined;
  readonly transport: RawTransport;

  private readonly transcript: Transcript;
  private readonly findings: Findings;
  private readonly exited?: Promise<ChildExit>;
  private readonly startupMs: number;
  private readonly tasks?: TaskCount;
  /** Whether anything arrived on this connection yet. */
  private heard = false;
  /** Lines of this connection that were not TAP messages (a banner, a log line), as received. */
  readonly nonProtocolLines: string[] = [];
  private waiters: Waiter[] = [];
  private closeWaiters: Array<() => void> = [];
  private exit?: ChildExit;

  constructor(o: PeerOptions) {
    this.transport = o.transport;
    this.binding = o.binding;
    this.state = o.state;
    this.transcript = o.transcript;
    this.findings = o.findings;
    this.ids = o.ids;
    this.conn = o.conn;
    this.stepTimeoutMs = o.stepTimeoutMs;
    this.timeScale = o.timeScale;
    this.exited = o.exited;
    this.startupMs = o.startupMs ?? o.stepTimeoutMs;
    this.tasks = o.tasks;
    this.exited?.then((exit) => {
      this.exit = exit;
      const how = exit.signal ? `killed by ${exit.signal}` : `exited with code ${exit.code}`;
      this.transcript.note(this.conn, `agent process ${how}`);
    });
    o.transport.onmessage = (frame) => this.onFrame(frame);
    o.transport.onclose = (info) => this.onClose(info);
    o.transport.onerror = (err) => this.transcript.note(this.conn, `transport error: ${err.message}`);
  }

  /** Everything received in this case so far (all connections). */
  get received(): readonly Received[] {
    return this.findings.received;
  }

  /** Starts delivering frames. */
  async start(): Promise<void> {
    await this.transport.start();
  }

  /** Builds a message from this harness to the agent with every envelope member filled in. */
  envelope(type: string, payload: Record<string, unknown>, extra: Partial<Wire> = {}): Wire {
    const s = this.state;
    const msg: Wire = {
      protocol: `tap/${s.version ?? '1.0'}`,
      message_id: this.ids.message(),
      type,
      source: s.selfId,
      target: type === 'handshake.init' && !s.established ? '*' : (s.agentId ?? '*'),
      timestamp: rfc3339(),
      payload,
    };
    if (s.bound && s.sessionId !== undefined) msg.session_id = s.sessionId;
    return { ...msg, ...extra };
  }

  /** Sends a message, signing it under integrity; an invalid message is the harness's fault unless deliberate. */
  async send(msg: Wire, opts: SendOptions = {}): Promise<Wire> {
    let out = msg;
    const key = this.state.integrity;
    if (key && opts.sign !== false && out.signature === undefined) {
      out = signMessage(out as unknown as Record<string, unknown>, key.key, key.keyId) as unknown as Wire;
    }
    const text = JSON.stringify(out);
    const flags: string[] = [];
    if (opts.deliberate) flags.push(`deliberate: ${opts.deliberate}`);
    else {
      const issues = validateMessage(out);
      if (issues) {
        const text = `the harness sent an invalid ${out.type}: ${describeIssues(issues, 3, out)}`;
        flags.push(`harness fault: ${text}`);
        this.findings.violations.push({ by: 'harness', text, at: this.transcript.now() });
      }
    }
    if (out.type === 'error') this.state.sentErrors.add(out.message_id);
    this.tasks?.ledger.sent(this.tasks.owner, this.state, out, opts.deliberate !== undefined);
    this.transcript.add({
      conn: this.conn,
      dir: 'out',
      text,
      bytes: Buffer.byteLength(text),
      type: out.type,
      flags: flags.length ? flags : undefined,
    });
    await this.transport.send(text);
    return out;
  }

  /** Builds and sends a message (see `envelope` and `send`). */
  post(type: string, payload: Record<string, unknown>, extra: Partial<Wire> = {}, opts: SendOptions = {}): Promise<Wire> {
    return this.send(this.envelope(type, payload, extra), opts);
  }

  /** Sends an arbitrary text as one frame, on purpose (malformed input, another serialization). */
  async sendText(text: string, why: string): Promise<void> {
    this.transcript.add({ conn: this.conn, dir: 'out', text, bytes: Buffer.byteLength(text), flags: [`deliberate: ${why}`] });
    // A task.request in another serialization may start a task like any other.
    const msg = this.tasks ? parsedRequest(text) : undefined;
    if (msg) this.tasks!.ledger.sent(this.tasks!.owner, this.state, msg, false);
    await this.transport.send(text);
  }

  /** Sends raw bytes as one frame, on purpose: invalid UTF-8, binary frames. */
  async sendRaw(bytes: Uint8Array, why: string, binary = false): Promise<void> {
    const preview = Buffer.from(bytes.subarray(0, 200))
      .toString('latin1')
      .replace(/[^\x20-\x7e]/g, '·');
    this.transcript.add({
      conn: this.conn,
      dir: 'out',
      text: preview,
      bytes: bytes.byteLength,
      flags: [`deliberate: ${why}${binary ? ' (binary frame)' : ''}`],
    });
    await this.transport.sendRaw(bytes, { binary });
  }

  /**
   * Waits for a received message matching `pred` (looking first at what already arrived at or
   * after index `since`); on timeout returns a FAIL outcome that says why nothing came.
   */
  async waitFor(pred: (r: Received) => boolean, what: string, timeoutMs = this.stepTimeoutMs, since = 0): Promise<Got<Received>> {
    const found = this.findings.received.find((r) => r.index >= since && pred(r));
    if (found) return got(found);
    const r = await this.wait(pred, timeoutMs, since);
    if (r) return got(r);
    return this.diagnose(what, timeoutMs, (m) => m.index >= since && pred(m));
  }

  /** Waits for any message matching `predicate` (first looking at what already arrived). */
  expectReply(predicate: (r: Received) => boolean, timeoutMs = this.stepTimeoutMs): Promise<Got<Received>> {
    return this.waitFor(predicate, 'the expected message', timeoutMs);
  }

  /** Runs the four-step handshake (see steps.ts). */
  handshake(o: HandshakeOptions = {}): Promise<Got<Established>> {
    return handshake(this, o);
  }

  /** Sends a task.request and returns it with the direct reply (see steps.ts). */
  request(capability: string, input: unknown, o: RequestOptions = {}): Promise<{ sent: Wire; reply: Got<Received> }> {
    return request(this, capability, input, o);
  }

  /** Waits for a task's result and returns its whole stream (see steps.ts). */
  collectUntilResult(taskId: string, timeoutMs = this.stepTimeoutMs): Promise<Got<{ stream: Received[]; result: Received }>> {
    return collectUntilResult(this, taskId, timeoutMs);
  }

  /** Waits like `waitFor` but returns undefined instead of diagnosing. */
  async poll(pred: (r: Received) => boolean, timeoutMs: number, since = 0): Promise<Received | undefined> {
    const found = this.findings.received.find((r) => r.index >= since && pred(r));
    if (found) return found;
    return this.wait(pred, timeoutMs, since);
  }

  /** The direct reply to a message the harness sent. */
  reply(to: Wire | string, timeoutMs = this.stepTimeoutMs): Promise<Got<Received>> {
    const id = typeof to === 'string' ? to : to.message_id;
    const type = typeof to === 'string' ? 'message' : to.type;
    return this.waitFor((r) => r.msg.reply_to === id, `a reply to ${type} ${id}`, timeoutMs);
  }

  /** Pings the agent and waits for the pong. */
  async ping(timeoutMs = this.stepTimeoutMs): Promise<Got<Received>> {
    const sent = await this.post('ping', {});
    return this.waitFor((r) => r.msg.type === 'pong' && r.msg.reply_to === sent.message_id, 'a pong', timeoutMs);
  }

  /**
   * A round trip that lets the agent catch up: ping, wait for the pong, then a short settle time
   * (scaled). Used before asserting that something did not happen.
   */
  async barrier(settleMs = 150): Promise<Got<Received>> {
    const pong = await this.ping();
    await sleep(settleMs * this.timeScale);
    return pong;
  }

  /** The index the next received message will get. */
  mark(): number {
    return this.findings.received.length;
  }

  /** Messages received at or after index `since`, on any connection of the case. */
  since(since: number): Received[] {
    return this.findings.received.filter((r) => r.index >= since);
  }

  /** Messages received at or after index `since` on this connection only. */
  sinceHere(since: number): Received[] {
    return this.findings.received.filter((r) => r.index >= since && r.conn === this.conn);
  }

  /** Resolves when the connection has closed, or after `timeoutMs` with false. */
  async waitClosed(timeoutMs: number): Promise<boolean> {
    if (this.closed) return true;
    return new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), timeoutMs);
      this.closeWaiters.push(() => {
        clearTimeout(timer);
        resolve(true);
      });
    });
  }

  /** Resolves with the process exit (stdio), or undefined after `timeoutMs`. */
  async waitExit(timeoutMs: number): Promise<ChildExit | undefined> {
    if (!this.exited) return undefined;
    let timer: NodeJS.Timeout | undefined;
    const r = await Promise.race([this.exited, new Promise<undefined>((res) => (timer = setTimeout(() => res(undefined), timeoutMs)))]);
    clearTimeout(timer);
    return r;
  }

  /** Closes the connection (stdio: ends the agent's input). */
  async close(info?: CloseInfo): Promise<void> {
    await this.transport.close(info);
  }

  /**
   * Explains a missing reply: the connection closed (crashed), the agent does not answer a ping
   * either (hung), or it answers pings but not this (ignoring).
   */
  async diagnose(what: string, waitedMs: number, pred?: (r: Received) => boolean): Promise<Got<Received>> {
    const waited = `${Math.round(waitedMs)} ms`;
    if (this.closed) {
      const exit = this.exit ?? (await this.waitExit(200));
      const how = exit
        ? exit.signal
          ? `the agent process was killed by ${exit.signal}`
          : `the agent process exited with code ${exit.code}`
        : `the agent closed the connection (code ${this.closed.code ?? 'none'}${this.closed.reason ? `, "${this.closed.reason}"` : ''})`;
      return miss({ ...fail(`${none(what)}: ${how} (crashed)`, what, how), silence: 'crashed' });
    }
    // Without the agent's id there is no valid ping to tell a hang from ignoring; an agent that
    // wrote nothing but non-protocol lines is failed for them at once.
    const spokeTap = this.findings.received.some((r) => r.conn === this.conn);
    if (!spokeTap && this.nonProtocolLines.length > 0) return miss(this.unclassified(what, waited));
    if (this.state.agentId === undefined) {
      // As long as a ping would be out, the awaited message may still come: then it was only slow.
      const late = pred ? await this.wait(pred, this.stepTimeoutMs, 0) : undefined;
      if (late) {
        this.transcript.note(this.conn, `${what} came late, after ${waited}`);
        return got(late);
      }
      if (this.closed) return this.diagnose(what, waitedMs);
      return miss(this.unclassified(what, waited));
    }
    const sent = await this.post('ping', {});
    const isPong = (r: Received) => r.msg.type === 'pong' && r.msg.reply_to === sent.message_id;
    // The awaited message may still come while the ping is out: then it was only slow.
    const r = await this.wait((m) => isPong(m) || pred?.(m) === true, this.stepTimeoutMs, 0);
    const late = pred ? this.findings.received.find((m) => pred(m)) : undefined;
    if (late) {
      this.transcript.note(this.conn, `${what} came late, after ${waited}`);
      return got(late);
    }
    if (r) {
      return miss({
        ...fail(
          `${none(what)} within ${waited}; the agent answers pings, so it is ignoring the message${this.nonProtocolNote()}`,
          what,
          'nothing (pings still answered)',
        ),
        silence: 'ignoring',
      });
    }
    if (this.closed) return this.diagnose(what, waitedMs);
    return miss({
      ...fail(
        `${none(what)} within ${waited}, and no answer to a ping either: the agent hung${this.nonProtocolNote()}`,
        what,
        'nothing (not even a pong)',
      ),
      silence: 'hung',
    });
  }

  /**
   * The outcome of a wait that ran out where a ping cannot classify the silence: the agent's id
   * is not known yet, or the agent wrote only non-protocol lines, which are quoted
   * (spec: conformance#verdicts, TAP-CONF-004).
   */
  private unclassified(what: string, waited: string): Outcome {
    const lines = this.nonProtocolLines;
    if (lines.length === 0) return fail(`${none(what)} within ${waited}: the agent sent nothing the harness could read`, what, 'nothing');
    const noun = lines.length === 1 ? 'a line that is not a TAP message' : `${lines.length} lines that are not TAP messages`;
    return fail(
      `${none(what)} within ${waited}; instead the agent wrote ${noun} to its output: ${this.quotedLines()} (TAP-CONF-004: stdout carries only TAP messages; logs go to stderr)`,
      what,
      `${lines.length === 1 ? 'the line' : 'the lines'} ${this.quotedLines()}`,
    );
  }

  /** Up to three non-protocol lines of this connection, quoted. */
  private quotedLines(): string {
    const lines = this.nonProtocolLines;
    const quoted = lines
      .slice(0, 3)
      .map((l) => JSON.stringify(cut(l, 200)))
      .join(', ');
    return lines.length > 3 ? `${quoted} and ${lines.length - 3} more` : quoted;
  }

  /** "; it also wrote … not TAP messages: …", or nothing when every line was a TAP message. */
  private nonProtocolNote(): string {
    const n = this.nonProtocolLines.length;
    if (n === 0) return '';
    return `; it also wrote ${n === 1 ? 'a line' : `${n} lines`} that ${n === 1 ? 'is' : 'are'} not a TAP message: ${this.quotedLines()} (TAP-CONF-004)`;
  }

  private wait(pred: (r: Received) => boolean, timeoutMs: number, since: number): Promise<Received | undefined> {
    const already = this.findings.received.find((r) => r.index >= since && pred(r));
    if (already) return Promise.resolve(already);
    if (this.closed) return Promise.resolve(undefined);
    // Until the agent has said anything on this connection, it may still be starting up; once it
    // has, the wait restarts with the step's own timeout.
    const own = timeoutMs;
    if (!this.heard) timeoutMs = Math.max(timeoutMs, this.startupMs);
    return new Promise((resolve) => {
      const waiter: Waiter = {
        pred,
        since,
        resolve: (r) => {
          clearTimeout(timer);
          this.waiters = this.waiters.filter((w) => w !== waiter);
          resolve(r);
        },
        rearm: () => {
          const left = started + timeoutMs - Date.now();
          if (own >= left) return;
          clearTimeout(timer);
          timer = setTimeout(() => waiter.resolve(undefined), own);
        },
      };
      const started = Date.now();
      let timer = setTimeout(() => waiter.resolve(undefined), timeoutMs);
      this.waiters.push(waiter);
    });
  }

  private onFrame(frame: InboundFrame): void {
    if (!this.heard) {
      this.heard = true;
      for (const w of this.waiters) w.rearm?.();
    }
    let result: Inspected;
    try {
      result = inspectFrame(frame, this.state, this.binding);
    } catch (err) {
      // No frame may stop the harness: one it cannot inspect is the agent's fault, reported as such.
      const why = `the harness could not inspect a ${frame.byteLength}-byte frame (${(err as Error)?.message ?? String(err)})`;
      result = { violations: [why], resent: false, nonProtocol: false };
    }
    const flags = result.violations.map((v) => `agent fault: ${v}`);
    if (result.resent) flags.push('re-sent');
    this.transcript.add({
      conn: this.conn,
      dir: 'in',
      text: result.text ?? Buffer.from(frame.bytes.subarray(0, 200)).toString('hex'),
      bytes: frame.byteLength,
      type: result.msg?.type,
      flags: flags.length ? flags : undefined,
    });
    for (const v of result.violations) this.findings.violations.push({ by: 'agent', text: v, at: this.transcript.now() });
    if (result.nonProtocol) {
      this.findings.nonProtocol++;
      this.nonProtocolLines.push(result.text ?? '');
    }
    if (!result.msg) return;
    const rec: Received = {
      index: this.findings.received.length,
      at: this.transcript.now(),
      conn: this.conn,
      text: result.text!,
      msg: result.msg,
      resent: result.resent,
      session: this.state,
    };
    this.findings.received.push(rec);
    const busy = this.tasks?.ledger.received(this.tasks.owner, this.state, rec.msg, this.tasks.fillsLimits);
    if (busy && !rec.resent) {
      this.findings.busyByLoad.push(busy);
      this.transcript.note(this.conn, busy);
    }
    if (rec.msg.type === 'ping' && !rec.resent && this.answerPings) void this.answerPing(rec.msg);
    for (const w of [...this.waiters]) if (rec.index >= w.since && w.pred(rec)) w.resolve(rec);
  }

  private async answerPing(ping: Wire): Promise<void> {
    if (this.closed) return;
    try {
      await this.post('pong', {}, { reply_to: ping.message_id });
    } catch {
      // The connection went away; nothing to answer.
    }
  }

  private onClose(info: CloseInfo): void {
    this.closed = { ...info, at: this.transcript.now() };
    this.transcript.note(this.conn, `connection closed (code ${info.code ?? 'none'}${info.reason ? `, ${info.reason}` : ''})`);
    for (const w of [...this.waiters]) w.resolve(undefined);
    for (const c of this.closeWaiters.splice(0)) c();
  }
}

/**
 * The task.request a text holds, when it is one valid against the schemas (in whatever
 * serialization); an invalid one is for the agent to refuse, often in an error it cannot tie to it.
 */
function parsedRequest(text: string): Wire | undefined {
  let v: Wire;
  try {
    v = JSON.parse(text) as Wire;
  } catch {
    return undefined;
  }
  if (v === null || typeof v !== 'object' || v.type !== 'task.request') return undefined;
  return validateMessage(v) ? undefined : v;
}

/** Sleeps `ms` milliseconds. */
export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
