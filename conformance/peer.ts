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
import { signMessage } from './mac.ts';
import { describeIssues, validateMessage } from './schemas.ts';
import type { IdSource, SessionState, Wire } from './session-state.ts';
import type { Transcript } from './transcript.ts';
import { got, type Got } from './verdict.ts';
import type { Findings, Received } from './findings.ts';
import { diagnoseSilence } from './silence.ts';
import { Waits } from './waits.ts';

export { Findings, none, type Received, type Violation } from './findings.ts';

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

/** How long, after an agent's exit, the harness waits for the end of its output before it judges what it read. */
const OUTPUT_END_MS = 2000;

/** Options of one send. */
export interface SendOptions {
  /** Sign under the session's integrity (default: when integrity is in force). */
  sign?: boolean;
  /** The harness sends this invalid on purpose: say why, and skip the outbound schema check. */
  deliberate?: string;
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
  private readonly tasks?: TaskCount;
  /** Lines of this connection that were not TAP messages (a banner, a log line), as received. */
  readonly nonProtocolLines: string[] = [];
  private readonly waits: Waits;
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
    this.waits = new Waits(this.findings.received, o.startupMs ?? o.stepTimeoutMs);
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
    // spec: tasks#quiet-tasks — a quiet request of a 1.1 session gets a stream of its outcome alone.
    if (out.type === 'task.request' && out.payload?.quiet === true && this.state.version !== '1.0' && typeof out.task_id === 'string')
      this.state.quietTasks.add(out.task_id);
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
  waitClosed(timeoutMs: number): Promise<boolean> {
    return this.waits.closed(this.closed !== undefined, timeoutMs);
  }

  /**
   * Resolves with the process exit (stdio), or undefined after `timeoutMs`. A process's exit can be
   * reported before the harness has read the last of its output (a farewell, a stray line): an exit
   * is returned only once that output has ended too, or OUTPUT_END_MS (at most `timeoutMs`) later.
   */
  async waitExit(timeoutMs: number): Promise<ChildExit | undefined> {
    if (!this.exited) return undefined;
    let timer: NodeJS.Timeout | undefined;
    const r = await Promise.race([this.exited, new Promise<undefined>((res) => (timer = setTimeout(() => res(undefined), timeoutMs)))]);
    clearTimeout(timer);
    if (r) await this.waitClosed(Math.min(OUTPUT_END_MS, timeoutMs));
    return r;
  }

  /** Closes the connection (stdio: ends the agent's input). */
  async close(info?: CloseInfo): Promise<void> {
    await this.transport.close(info);
  }

  /** Explains a missing reply: crashed, hung or ignoring (see silence.ts). */
  diagnose(what: string, waitedMs: number, pred?: (r: Received) => boolean): Promise<Got<Received>> {
    return diagnoseSilence(
      {
        closed: () => this.closed,
        exit: async () => this.exit ?? (await this.waitExit(200)),
        spokeTap: () => this.findings.received.some((r) => r.conn === this.conn),
        nonProtocolLines: this.nonProtocolLines,
        agentKnown: () => this.state.agentId !== undefined,
        ping: () => this.post('ping', {}),
        wait: (p, timeoutMs) => this.wait(p, timeoutMs, 0),
        received: this.findings.received,
        stepTimeoutMs: this.stepTimeoutMs,
        note: (text) => this.transcript.note(this.conn, text),
      },
      what,
      waitedMs,
      pred,
    );
  }

  private wait(pred: (r: Received) => boolean, timeoutMs: number, since: number): Promise<Received | undefined> {
    return this.waits.message(pred, timeoutMs, since, this.closed !== undefined);
  }

  private onFrame(frame: InboundFrame): void {
    this.waits.heard();
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
    this.waits.arrived(rec);
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
    this.waits.ended();
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
