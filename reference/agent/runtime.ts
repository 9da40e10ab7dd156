/**
 * The agent's shared state: card, capability handlers, keys, tables of sessions, tasks and
 * idempotency records, the durable store and the journal. Every session and task module works
 * on one Runtime.
 */
import type { AgentCard, Capability } from '../../schemas/src/index.ts';
import { messageIds, pooled, webRandom, type RandomSource } from '../core/ids.ts';
import type { Hmac } from '../core/signing.ts';
import { checkLogger } from '../core/platform.ts';
import { mayDeclareCapability } from '../core/reserved-names.ts';
import { hmacSha256 } from '../crypto.ts';
import { loadTelemetry, type Telemetry } from '../telemetry.ts';
import { issueList, validateAgainst, type Issue } from '../core/validate.ts';
import type { Handler } from './handler.ts';
import { inputValidator } from './input-schemas.ts';
import { KeyRing } from './integrity.ts';
import type { Journal, JournalRecord } from './journal.ts';
import { TaskMonitor } from './monitor.ts';
import { AuditTrail } from '../ops/audit.ts';
import {
  settingsOf,
  stderrLogger,
  systemClock,
  type AgentOptions,
  type Authenticator,
  type Clock,
  type Logger,
  type Settings,
} from './options.ts';
import type { OutboundContext } from './outbound.ts';
import type { Session } from './sessions.ts';
import { IdempotencyTable, TaskTable, type Task } from './tasks.ts';

/** A capability the agent serves: its card entry, handler and compiled input schema. */
export interface CapabilityEntry {
  capability: Capability;
  handler: Handler;
  validateInput?: (input: unknown, text?: string) => Issue[] | null;
}

/** The runtime state of one agent. */
export class Runtime {
  readonly card: AgentCard;
  readonly agentId: string;
  readonly capabilities = new Map<string, CapabilityEntry>();
  readonly settings: Settings;
  readonly clock: Clock;
  readonly random: RandomSource;
  readonly hmac: Hmac;
  readonly log: Logger;
  readonly keys: KeyRing;
  readonly authenticate?: Authenticator;
  /** Refuse a handshake without credentials unless the binding authenticated it (spec: handshake#credentials). */
  readonly requireCredentials: boolean;
  readonly out: OutboundContext;
  readonly sessions = new Map<string, Session>();
  readonly tasks: TaskTable;
  readonly idempotency = new IdempotencyTable();
  /** Agent-wide durable values (tap.test.counter lives here). */
  readonly store = new Map<string, unknown>();
  journal?: Journal;
  /** A process-wide shutdown is under way. */
  shuttingDown = false;
  /** Principals holding tap.admin.shutdown (spec: authorization#admin-permissions). */
  readonly admins: ReadonlySet<string>;
  /** Its counters for /metrics, and its audit trail when it keeps one. */
  readonly monitor: TaskMonitor;
  /** OpenTelemetry, loaded when the options ask for it (undefined when they do not, or when it could not be loaded). */
  readonly telemetry?: Promise<Telemetry | undefined>;
  /** Starts the process-wide shutdown; set by createAgent. */
  shutdownProcess: (reason: string) => void = () => {};

  constructor(options: AgentOptions) {
    checkShape(options);
    this.settings = settingsOf(options);
    this.clock = options.clock ?? systemClock;
    this.random = options.random ?? pooled(webRandom);
    this.hmac = options.hmac ?? hmacSha256;
    checkLogger(options.logger, 'createAgent');
    this.log = options.logger ?? stderrLogger;
    this.keys = new KeyRing(options.keys ?? []);
    this.authenticate = options.authenticate;
    this.requireCredentials = options.requireCredentials === true;
    if (this.requireCredentials && !this.authenticate) throw new TypeError('requireCredentials needs an authenticate function');
    this.admins = new Set(options.adminPrincipals ?? []);
    if (options.telemetry) {
      this.telemetry = loadTelemetry(options.telemetry).catch((err: Error) => {
        this.log('error', `tasks are not traced: ${err.message}`);
        return undefined;
      });
    }
    this.tasks = new TaskTable(
      {
        maxPerPrincipal: this.settings.maxTasksKeptPerPrincipal,
        maxTotal: this.settings.maxTasksKept,
        maxBytesPerPrincipal: this.settings.maxRetainedBytesPerPrincipal,
        retentionMs: this.settings.resumeWindowMs,
      },
      () => this.clock.now(),
      (t) => this.idempotency.forget(t),
    );
    const declared = new Map(options.card.capabilities.map((c) => [c.name, c]));
    for (const [name, def] of Object.entries(options.capabilities)) {
      const capability = typeof def === 'function' ? declared.get(name) : def.capability;
      if (!capability) throw new Error(`capability ${name} has a handler but no entry in the card; give it as { capability, handler }`);
      if (capability.name !== name) throw new Error(`capability ${name} is declared as ${capability.name}`);
      // spec: versioning#reserved-names
      if (!mayDeclareCapability(name))
        throw new Error(`capability names starting with "tap." are reserved; ${name} is not one the specification defines`);
      const handler = typeof def === 'function' ? def : def.handler;
      if (typeof handler !== 'function')
        throw new Error(`capability ${name} has no handler: give it as { capability, handler }, handler a function`);
      let validateInput: CapabilityEntry['validateInput'];
      const schema = (typeof def === 'function' ? undefined : def.inputSchema) ?? capability.input_schema;
      if (schema) validateInput = inputValidator(name, schema as Record<string, unknown>);
      this.capabilities.set(name, { capability, handler, validateInput });
    }
    for (const name of declared.keys()) {
      if (!this.capabilities.has(name)) throw new Error(`capability ${name} is in the card but has no handler`);
    }
    this.card = {
      ...options.card,
      capabilities: [...this.capabilities.values()].map((c) => c.capability),
      durability: options.stateDir ? 'restart' : 'process',
    };
    const issues = validateAgainst('agent-card.schema.json', this.card);
    if (issues) throw new Error(`the agent card is invalid: ${issueList(issues)}`);
    this.agentId = this.card.agent_id;
    const audit = options.audit ? new AuditTrail(options.audit, (m) => this.log('warn', m)) : undefined;
    this.monitor = new TaskMonitor(this.agentId, this.clock.now(), audit, options.metrics !== false);
    this.out = {
      agentId: this.agentId,
      clock: this.clock,
      random: this.random,
      hmac: this.hmac,
      nextId: messageIds(this.random),
      validate: options.validateOutbound ?? outboundCheckFromEnv(),
    };
  }

  /** Writes a journal record before the message or effect it guards (no-op without a state directory). */
  persist(record: JournalRecord): void {
    this.journal?.append(record);
  }

  /** The session that carries a task's stream. */
  sessionOf(task: Task): Session | undefined {
    return this.sessions.get(task.sessionId);
  }

  /** The current time in ms. */
  now(): number {
    return this.clock.now();
  }
}

/** TAP_VALIDATE_OUTBOUND=1 turns on the check of every built message where no option says otherwise. */
function outboundCheckFromEnv(): boolean {
  return (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env?.TAP_VALIDATE_OUTBOUND === '1';
}

/** Refuses options without the parts every agent needs, with a sentence instead of a TypeError further in. */
function checkShape(options: AgentOptions): void {
  const o = options as Partial<AgentOptions> | null | undefined;
  const isObject = (v: unknown) => typeof v === 'object' && v !== null && !Array.isArray(v);
  if (!isObject(o)) throw new TypeError('createAgent takes an options object: { card, capabilities, ... }');
  if (!isObject(o!.card) || !Array.isArray(o!.card!.capabilities))
    throw new TypeError('createAgent: options.card must be an agent card with a capabilities array (spec: handshake#agent-card)');
  if (!isObject(o!.capabilities))
    throw new TypeError('createAgent: options.capabilities must map each capability name to its handler, or to { capability, handler }');
}
