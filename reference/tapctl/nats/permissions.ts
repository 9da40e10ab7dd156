/**
 * The permission model of the NATS binding (spec: bindings-nats#security) as data: for each role
 * (agent, durable runner, requester, operator) the subjects its NATS user may publish to and
 * subscribe to, every one built by the binding's checked subject builder, and the nats-server
 * configuration (static users, NATS Server 2.9) that gives a set of principals their roles.
 */
import { DEFAULT_NAMES, deadSubject, eventSubject, resultSubject, taskSubject, type DurableNames } from '../../jetstream/names.ts';
import { REGISTRY_BUCKET } from '../../mesh/registry.ts';
import {
  buildSubject,
  checkIdentifier,
  inboxPrefixOf,
  jsApiSubject,
  kvSubject,
  subjectsOf,
  Wildcard,
} from '../../transports/nats/subjects.ts';

/** The roles of the model. */
export type Role = 'agent' | 'runner' | 'requester' | 'operator';

/** What one NATS user may do. */
export interface UserPermissions {
  /** The NATS user name: the principal's id. */
  user: string;
  roles: Role[];
  publish: string[];
  subscribe: string[];
  /** Whether the user may answer requests made to it (the agent's open replies). */
  allowResponses: boolean;
}

/** The principals of a deployment, by role; an id may have several roles (an agent that also runs its durable queues). */
export interface Deployment {
  agents: readonly string[];
  runners: readonly string[];
  requesters: readonly string[];
  operators: readonly string[];
  names?: DurableNames;
  registryBucket?: string;
}

const kvStream = (bucket: string): string => `KV_${bucket}`;
const stream = (name: string) => ({ token: name, what: 'stream name' });

/** The JetStream API subjects that read a stream: its info and its stored messages. */
function readStream(name: string): string[] {
  return [
    jsApiSubject('STREAM.INFO', name),
    jsApiSubject('STREAM.MSG.GET', name),
    buildSubject('$JS.API.DIRECT.GET', stream(name)),
    buildSubject('$JS.API.DIRECT.GET', stream(name), Wildcard.TAIL),
  ];
}

/** The JetStream API subjects of an ordered (ephemeral) consumer on a stream: how a watch or a replay reads it. */
function orderedConsumer(name: string): string[] {
  return ['CREATE', 'INFO', 'DELETE', 'MSG.NEXT'].map((verb) => buildSubject('$JS.API.CONSUMER', verb, stream(name), Wildcard.TAIL));
}

/** What every user of the model may do: its own inbox, and the JetStream account info its client asks first. */
function common(user: string): Pick<UserPermissions, 'publish' | 'subscribe'> {
  return { publish: [jsApiSubject('INFO')], subscribe: [buildSubject(inboxPrefixOf(user), Wildcard.TAIL)] };
}

/** An agent's sessions and its registry entry (spec: bindings-nats#security, registry#nats). */
function agentRole(id: string, prefix: string, bucket: string): Pick<UserPermissions, 'publish' | 'subscribe'> {
  const own = subjectsOf(prefix, id, Wildcard.TOKEN);
  return {
    publish: [own.toRequester, kvSubject(bucket, id), jsApiSubject('STREAM.CREATE', kvStream(bucket)), ...readStream(kvStream(bucket))],
    subscribe: [own.open, own.toAgent],
  };
}

/**
 * A durable runner: it consumes TAP_TASKS and the advisories TAP_ADVISORIES keeps, and writes
 * TAP_EVENTS, TAP_RESULTS, TAP_DEAD and TAP_IDEMPOTENCY (spec: bindings-nats#task-queue).
 */
function runnerRole(n: DurableNames): Pick<UserPermissions, 'publish' | 'subscribe'> {
  const streams = [n.tasks, n.results, n.events, n.dead, n.advisories, kvStream(n.idempotency)];
  return {
    publish: [
      eventSubject(n, Wildcard.TAIL),
      resultSubject(n, Wildcard.TAIL),
      deadSubject(n, Wildcard.TAIL),
      kvSubject(n.idempotency, Wildcard.TAIL),
      ...streams.flatMap((s) => [jsApiSubject('STREAM.CREATE', s), ...readStream(s)]),
      jsApiSubject('STREAM.MSG.DELETE', n.tasks),
      // The durable consumers of the capabilities and of their advisories: created, read and pulled
      // from; deliveries acknowledged. Those of the queue are listed too.
      ...[n.tasks, n.advisories].flatMap((s) => [
        ...['CREATE', 'DURABLE.CREATE', 'INFO', 'MSG.NEXT'].map((verb) => buildSubject('$JS.API.CONSUMER', verb, stream(s), Wildcard.TAIL)),
        buildSubject('$JS.ACK', stream(s), Wildcard.TAIL),
      ]),
      jsApiSubject('CONSUMER.LIST', n.tasks),
      // A replay of a task's stream (the events of a durable task a session resumes).
      ...orderedConsumer(n.events),
    ],
    subscribe: [],
  };
}

/** A requester: sessions with the deployment's agents, durable submits, and reading results, streams and the registry. */
function requesterRole(agents: readonly string[], n: DurableNames, bucket: string): Pick<UserPermissions, 'publish' | 'subscribe'> {
  const sessions = agents.map((a) => subjectsOf(n.prefix, a, Wildcard.TOKEN));
  return {
    publish: [
      ...sessions.flatMap((s) => [s.open, s.toAgent]),
      taskSubject(n, Wildcard.TAIL),
      jsApiSubject('STREAM.INFO', n.tasks),
      ...readStream(n.results),
      ...readStream(kvStream(n.idempotency)),
      jsApiSubject('STREAM.INFO', n.events),
      ...orderedConsumer(n.events),
      ...readStream(kvStream(bucket)),
      ...orderedConsumer(kvStream(bucket)),
    ],
    subscribe: sessions.map((s) => s.toRequester),
  };
}

/** Throws for a principal id that cannot name a NATS user of the model, or two ids that would share an inbox. */
function checkPrincipals(d: Deployment): string[] {
  const ids = [...new Set([...d.agents, ...d.runners, ...d.requesters, ...d.operators])];
  const inboxes = new Map<string, string>();
  for (const id of ids) {
    checkIdentifier(id, 'principal id');
    const inbox = inboxPrefixOf(id);
    const other = inboxes.get(inbox);
    if (other !== undefined) throw new TypeError(`principals ${other} and ${id} would share the inbox prefix ${inbox}: rename one of them`);
    inboxes.set(inbox, id);
  }
  return ids;
}

/** The permissions of every principal of a deployment: one NATS user each, with the union of its roles (spec: bindings-nats#security). */
export function permissionsOf(d: Deployment): UserPermissions[] {
  const n = d.names ?? DEFAULT_NAMES;
  const bucket = d.registryBucket ?? REGISTRY_BUCKET;
  return checkPrincipals(d).map((id) => {
    const roles = (['agent', 'runner', 'requester', 'operator'] as const).filter((r) =>
      ({ agent: d.agents, runner: d.runners, requester: d.requesters, operator: d.operators })[r].includes(id),
    );
    if (roles.includes('operator'))
      return { user: id, roles: [...roles], publish: ['>'], subscribe: ['>'], allowResponses: true } as UserPermissions;
    const parts = [common(id)];
    if (roles.includes('agent')) parts.push(agentRole(id, n.prefix, bucket));
    if (roles.includes('runner')) parts.push(runnerRole(n));
    if (roles.includes('requester')) parts.push(requesterRole(d.agents, n, bucket));
    return {
      user: id,
      roles: [...roles],
      publish: [...new Set(parts.flatMap((p) => p.publish))],
      subscribe: [...new Set(parts.flatMap((p) => p.subscribe))],
      allowResponses: roles.includes('agent'),
    };
  });
}

const quoted = (s: string): string => JSON.stringify(s);

/** The nats-server configuration of the users: an `authorization` block to give with -c (alone or included). */
export function serverConfig(users: readonly UserPermissions[], passwords: ReadonlyMap<string, string>, header: string): string {
  const lines = [`# ${header}`, "# Keep this file private: it holds every user's password.", 'authorization {', '  users = ['];
  for (const u of users) {
    const password = passwords.get(u.user);
    if (password === undefined) throw new Error(`no password for ${u.user}`);
    lines.push(`    # ${u.user}: ${u.roles.join(', ')}`);
    lines.push(`    { user: ${quoted(u.user)}, password: ${quoted(password)}, permissions: {`);
    lines.push(`      publish: { allow: [${u.publish.map(quoted).join(', ')}] }`);
    lines.push(`      subscribe: { allow: [${u.subscribe.map(quoted).join(', ')}] }`);
    if (u.allowResponses) lines.push('      allow_responses: true');
    lines.push('    } }');
  }
  lines.push('  ]', '}', '');
  return lines.join('\n');
}
