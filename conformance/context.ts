/**
 * What a running case works with: fresh connections to the agent (each its own process over
 * stdio), sessions already through the handshake, a seeded random source, scaled sleeps, and the
 * transcript and findings every connection of the case writes to.
 */
import type { TrustFile } from '../reference/trust.ts';
import { randomBytes } from 'node:crypto';
import { makeStateFolder, removeStateFolder } from './leftovers.ts';
import { limitsOf, TaskLedger, type TaskGate } from './load.ts';
import { Findings, Peer, sleep, type TaskCount } from './peer.ts';
import { IdSource, SessionState, type HmacKey } from './session-state.ts';
import { handshake, type Established, type HandshakeOptions } from './steps.ts';
import { abandonConnection, bindingOf, CONNECT_TIMEOUT_MS, keyEnv, openConnection, type Connection, type TargetSpec } from './target.ts';
import { Transcript } from './transcript.ts';
import type { TlsOptions } from '../reference/transports/tls.ts';
import type { RawTransport } from '../reference/transports/transport.ts';
import type { SigningKey } from '../reference/trust.ts';
import { mintToken, type TokenIssuer } from './tokens.ts';
import { fail, got, miss, type Got } from './verdict.ts';

/**
 * Part of every id the harness makes, fresh per run: a replay with the same seed draws the same
 * faults and choices, but its task ids and idempotency keys never collide with an earlier run's
 * on an agent that stays up between runs (a WebSocket server).
 */
const RUN_NONCE = randomBytes(2).toString('hex');

/** What the run learned from its first handshake with the agent. */
export interface Probe {
  /** How long the first handshake.ack took after the connection opened, in ms. */
  startupMs?: number;
  /** The agent card from handshake.ack, if the probe got that far. */
  // biome-ignore lint/suspicious/noExplicitAny: a message of any type, read by field after the schema validated it
  card?: Record<string, any>;
  // biome-ignore lint/suspicious/noExplicitAny: a message of any type, read by field after the schema validated it
  params?: Record<string, any>;
  agentId?: string;
  /** The version the first handshake negotiated: the version the run certifies (spec: conformance#verdicts). */
  version?: string;
  /** Why the probe handshake failed, if it did. */
  problem?: string;
  /**
   * A fault of the agent at its handshake that every case would meet (output that is not TAP,
   * an invalid ack), in one sentence: the run stops after the case that shows it.
   */
  stop?: string;
  /** The case that judges the fault of `stop` (default: the handshake case). */
  stopCase?: string;
}

/**
 * The run's security material (spec: security): client certificates of a wss:// or NATS target
 * (every connection presents the first; a second stands for another principal), the authorities
 * to trust, and the issuer whose tokens every session presents.
 */
export interface Security {
  clients: { cert: string; key: string }[];
  ca?: string;
  tokens?: TokenIssuer;
}

/**
 * True when the run's connections present client certificates and its sessions no token: every
 * session then proves a certificate's identity, the run's or the second one (spec: security#client-certificates).
 */
export function certificatePrincipals(env: Pick<RunEnv, 'security' | 'target'>): boolean {
  return (env.security?.clients.length ?? 0) > 0 && env.target.kind === 'websocket' && !env.security?.tokens;
}

/** Settings every case of a run shares. */
export interface RunEnv {
  target: TargetSpec;
  probe: Probe;
  /** The harness's agent id in unsigned sessions. */
  selfId: string;
  /** The run's HMAC key (bound to key.peer), if any. */
  key?: HmacKey;
  /** Client certificates and the token issuer, when the run was given them (spec: security). */
  security?: Security;
  stepTimeoutMs: number;
  /** How long a fresh connection may take to answer its first message (the agent starting up). */
  startupMs: number;
  timeScale: number;
  seed: number;
  /** Property runs per property case. */
  runs: number;
  /** A replay path for property and chaos cases (fast-check). */
  path?: string;
  /** The command line that replays one case: `replay(id)`. */
  replay: (id: string, extra?: string) => string;
  debug: boolean;
  /** Scenarios shared by the MUST and SHOULD halves of a timed rule: observed once per run. */
  shared: Map<string, Promise<unknown>>;
  /** The mesh registry the agent joined (spec: registry#nats), the process the suite may stop, and the trust file of its keys (spec: registry#signatures). */
  registry?: { url: string; agentPid?: number; trust?: TrustFile; agentCommand?: string };
  /** A key in the trust file of the agent's durable runners: the harness signs its records (spec: bindings-nats#signed-records). */
  signingKey?: SigningKey;
  /** Prints a line for the person running the suite (tap-conform: on stderr), if anyone listens. */
  log?: (line: string) => void;
  /**
   * The tasks the run holds at an agent every case shares (WebSocket, NATS), and the gate that
   * starts cases within its limits; without it each case counts its own, as over stdio, where
   * each case has its own agent process.
   */
  load?: { ledger: TaskLedger; gate?: TaskGate };
}

export interface ConnectOptions {
  /** Open a session bound to the run's HMAC key (harness id = the key's peer). */
  signed?: boolean;
  /** Continue an existing session (resume): shares its ids, streams and key. */
  state?: SessionState;
  /** Use this harness agent id. */
  selfId?: string;
  env?: Record<string, string>;
  cwd?: string;
  protocols?: string[];
  /** A state folder other than the case's own (to start an agent on a copy, say). */
  stateDir?: string;
  /** Puts a layer (the chaos fault layer) between the peer and the transport. */
  wrap?: (transport: RawTransport, connection: Connection) => RawTransport;
  /**
   * A session of a principal other than the run's: with client certificates but no tokens, the
   * second certificate (the case needs `principals: 'two'`); otherwise every session is its own
   * principal anyway.
   */
  principal?: 'another';
  /** This connection's TLS instead of the run's: another client certificate, or none. */
  tls?: TlsOptions;
  /** The session's credentials instead of a token of the run: given ones, or none at all. */
  credentials?: { scheme: string; token?: string } | 'none';
  /** The subject of the run's token for this session (default: one of its own, or the key's peer when signed). */
  subject?: string;
}

/** A seeded pseudo-random source (mulberry32). */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export { tidyShared, type Tidy } from './tidy.ts';

/** The findings of the case run that ran each shared scenario. */
const scenarioFindings = new WeakMap<Promise<unknown>, Findings>();

/** Numbers each case run, so that the tasks of two runs of one case are told apart. */
let caseRuns = 0;

/** A name for one run of a case, unique in the process: its tasks are counted under it. */
export function caseRun(caseId: string): string {
  return `${caseId}#${++caseRuns}`;
}

/** The context of one case run. */
export class CaseContext {
  readonly transcript = new Transcript();
  readonly findings = new Findings();
  readonly ids: IdSource;
  readonly random: () => number;
  readonly peers: Peer[] = [];
  readonly connections: Connection[] = [];
  /** The tasks this run holds at the agent, counted in the run's ledger (or the case's own). */
  readonly tasks: TaskCount;
  private connCount = 0;

  /** `fillsLimits`: the case fills the agent's task limits on purpose (see Case.fillsLimits); `owner` names the run in the ledger. */
  constructor(
    readonly env: RunEnv,
    readonly caseId: string,
    o: { fillsLimits?: boolean; owner?: string } = {},
  ) {
    this.tasks = {
      ledger: env.load?.ledger ?? new TaskLedger(limitsOf(env.probe.card), env.timeScale),
      owner: o.owner ?? caseRun(caseId),
      fillsLimits: o.fillsLimits === true,
    };
    this.random = seededRandom(env.seed ^ hash(caseId));
    this.ids = new IdSource(
      Math.floor(this.random() * 36 ** 4)
        .toString(36)
        .padStart(4, '0') + RUN_NONCE,
    );
  }

  get binding(): 'stdio' | 'websocket' | 'nats' {
    return bindingOf(this.env.target);
  }

  /** The agent card the probe saw. */
  // biome-ignore lint/suspicious/noExplicitAny: a message of any type, read by field after the schema validated it
  get card(): Record<string, any> | undefined {
    return this.env.probe.card;
  }

  private state?: string;
  /** Disposed: what still runs of the case (past its budget, or left unawaited) opens nothing that nothing would close (spec: conformance#processes). */
  private ended = false;

  /**
   * The case's own state folder, substituted for "{state}" in a stdio command: every process of
   * the case (a restart included) shares it, and no other case sees it.
   */
  stateDir(): string {
    if (this.ended) throw new CaseEnded();
    this.state ??= makeStateFolder();
    return this.state;
  }

  /** `ms` scaled by --time-scale. */
  scaled(ms: number): number {
    return ms * this.env.timeScale;
  }

  /** Sleeps `ms` (scaled). */
  sleep(ms: number): Promise<void> {
    return sleep(this.scaled(ms));
  }

  /** Adds a note to the transcript. */
  note(text: string): void {
    this.transcript.note(0, text);
  }

  /** Tells the person running the suite something now, as a line of its own on stderr; the report does not keep it. */
  inform(text: string): void {
    this.env.log?.(`tap-conform: ${text}`);
  }

  /** Opens a fresh connection (a new agent process over stdio) and returns its started peer. */
  async connect(o: ConnectOptions = {}): Promise<Got<Peer>> {
    if (this.ended) throw new CaseEnded();
    const conn = ++this.connCount;
    const key = this.env.key;
    if (o.signed && !key) throw new Error('a signed connection needs the run key');
    let connection: Connection;
    const tls = o.tls ?? this.tlsOf(o.principal);
    try {
      connection = await openConnection(this.env.target, {
        env: { ...keyEnv(key), ...(o.env ?? {}) },
        cwd: o.cwd,
        protocols: o.protocols,
        stateDir: o.stateDir ?? this.stateDir(),
        onStderr: (line) => this.transcript.add({ conn, dir: 'stderr', text: line }),
        connectTimeoutMs: this.scaled(CONNECT_TIMEOUT_MS),
        ...(tls ? { tls } : {}),
      });
    } catch (err) {
      const why = (err as Error).message;
      this.transcript.note(conn, `could not open a connection: ${why}`);
      return miss(fail(`could not open a connection to the agent: ${why}`, 'a connection', why));
    }
    if (this.ended) {
      await abandonConnection(connection);
      throw new CaseEnded();
    }
    this.connections.push(connection);
    this.transcript.note(
      conn,
      this.binding === 'stdio' ? `agent process started (pid ${connection.pid})` : `connected to ${this.env.target.display}`,
    );
    const state = o.state ?? new SessionState(o.selfId ?? (o.signed ? key!.peer : this.env.selfId), this.env.probe.agentId);
    if (o.signed && !o.state) state.integrity = key;
    if (!o.state) state.credentials = await this.credentialsOf(o, conn);
    if (o.state) {
      // A new connection of an existing session starts with a new handshake.
      state.bound = false;
      state.established = false;
    }
    const peer = new Peer({
      transport: o.wrap ? o.wrap(connection.transport, connection) : connection.transport,
      binding: this.binding,
      state,
      transcript: this.transcript,
      findings: this.findings,
      ids: this.ids,
      conn,
      stepTimeoutMs: this.env.stepTimeoutMs,
      startupMs: this.env.startupMs,
      timeScale: this.env.timeScale,
      exited: connection.exited,
      tasks: this.tasks,
    });
    await peer.start();
    if (this.ended) {
      await peer.close().catch(() => {});
      await abandonConnection(connection);
      throw new CaseEnded();
    }
    this.peers.push(peer);
    return got(peer);
  }

  /** The TLS of a connection for `principal`: the second client certificate for another principal of a certificate run. */
  private tlsOf(principal: ConnectOptions['principal']): TlsOptions | undefined {
    const sec = this.env.security;
    const other = sec?.clients[1];
    if (principal !== 'another' || sec?.tokens || !other) return undefined;
    return { ...(sec.ca !== undefined ? { ca: sec.ca } : {}), cert: other.cert, key: other.key };
  }

  /**
   * The credentials a new session presents: the given ones, or a token of the run's issuer whose
   * subject is the key's peer for a signed session (one principal, like the key's) and the
   * session's own otherwise (spec: security#bearer-tokens).
   */
  private async credentialsOf(o: ConnectOptions, conn: number): Promise<{ scheme: string; token?: string } | undefined> {
    if (o.credentials === 'none') return undefined;
    if (o.credentials) return o.credentials;
    const issuer = this.env.security?.tokens;
    if (!issuer) return undefined;
    const sub = o.subject ?? (o.signed ? this.env.key!.peer : `tap-conform.${RUN_NONCE}.${this.ids.task('s')}.${conn}`);
    return { scheme: 'bearer', token: await mintToken(issuer, { sub }) };
  }

  /** Opens a connection and runs the whole handshake; signed sessions propose integrity. */
  async session(o: HandshakeOptions & ConnectOptions = {}): Promise<Got<Peer>> {
    const r = await this.sessionWith(o);
    return r.ok ? got(r.value.peer) : r;
  }

  /** Like `session`, returning the handshake messages too. */
  async sessionWith(o: HandshakeOptions & ConnectOptions = {}): Promise<Got<{ peer: Peer; hs: Established }>> {
    const c = await this.connect(o);
    if (!c.ok) return c;
    const hs = await handshake(c.value, { integrity: o.signed, ...o });
    if (!hs.ok) return hs;
    return got({ peer: c.value, hs: hs.value });
  }

  /**
   * Runs a scenario once per run and shares its result: the MUST (occurrence) and SHOULD
   * (punctuality) halves of a timed rule judge the same observation.
   */
  shared<T>(key: string, scenario: (ctx: CaseContext) => Promise<T>): Promise<T> {
    let p = this.env.shared.get(key) as Promise<T> | undefined;
    if (p) {
      this.note(
        `the observation is shared with the other half of this timed rule (scenario "${key}"); its transcript is in the case that ran it first`,
      );
      // A BUSY the suite's load drew in the shared scenario explains this half's outcome too.
      const origin = scenarioFindings.get(p);
      return p.then((v) => {
        for (const b of origin?.busyByLoad ?? []) if (!this.findings.busyByLoad.includes(b)) this.findings.busyByLoad.push(b);
        return v;
      });
    }
    p = scenario(this);
    scenarioFindings.set(p, this.findings);
    this.env.shared.set(key, p);
    return p;
  }

  /** The connection behind a peer (for signals and exit status). */
  connectionOf(peer: Peer): Connection | undefined {
    return this.connections[this.peers.indexOf(peer)];
  }

  /** Closes every connection; spawned agents that do not exit in time are killed. */
  async dispose(): Promise<void> {
    this.ended = true;
    await Promise.all(
      this.peers.map(async (p, i) => {
        const c = this.connections[i];
        const closing = p.close().catch(() => {});
        const timer = setTimeout(() => c?.kill?.('SIGKILL'), this.scaled(3000));
        await closing;
        clearTimeout(timer);
        // spec: conformance#processes — nothing the agent started outlives the case.
        const left = (await c?.reap?.()) ?? 0;
        if (left > 0) this.transcript.note(i + 1, `killed ${left} process(es) the agent left running after it exited`);
      }),
    );
    if (this.state) removeStateFolder(this.state);
    // What the case left running at a shared agent keeps counting until it ends (see TaskLedger).
    this.tasks.ledger.release(this.tasks.owner);
  }
}

/** What a case body still running after its case was disposed meets at its next connection. */
class CaseEnded extends Error {
  constructor() {
    super('the case has ended: it opens no more connections');
  }
}

function hash(s: string): number {
  let h = 2166136261;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619);
  return h >>> 0;
}
