/**
 * Agents that break one rule of the registry on purpose, for the self-test of the registry
 * profile. Run as a process: `registry-broken.testkit.ts <fault> <nats-url> <agent-id>`; it serves the
 * reference runtime over NATS, joins the mesh with its fault, prints its URL once ready, and
 * shuts down on SIGTERM.
 */
import { randomBytes } from 'node:crypto';
import { Kvm } from '@nats-io/kv';
import { connect } from '@nats-io/transport-node';
import { createAgent, withConformanceCapabilities } from '../../reference/agent/index.ts';
import { SUPPORTED_VERSIONS } from '../../reference/core/catalogue.ts';
import type { RegistryEntry } from '../../reference/mesh/entry.ts';
import { joinMesh, type MemberSource } from '../../reference/mesh/member.ts';
import { openRegistry, REGISTRY_BUCKET } from '../../reference/mesh/registry.ts';
import type { Transport } from '../../reference/transports/index.ts';

/** The rule each broken agent breaks. */
export type RegistryFault =
  /** Writes its entry once, announcing a 200 ms heartbeat, and never renews it (TAP-REG-013). */
  | 'never-heartbeats'
  /** Renews its entry but always reports 0 running tasks (TAP-REG-006, TAP-REG-019). */
  | 'load-stuck'
  /** Exits on SIGTERM without withdrawing its entry (TAP-REG-025). */
  | 'left-behind'
  /** Sends its tasks' messages without the request's trace_id and span_id (TAP-MESH-019). */
  | 'trace-dropped'
  /** Has a key in the trust file but joins without it: its entry carries no signature (TAP-REG-052). */
  | 'unsigned'
  /** Stops writing its entry for good when another write replaces it, as TAP 1.0 before its errata said (TAP-REG-018). */
  | 'leaves-when-overwritten'
  /** Joins with an instance of 8 hex digits, 32 bits (TAP-REG-009). */
  | 'short-instance'
  /** Renews its entry with a blind put instead of an update against the last revision (TAP-REG-012). */
  | 'blind-writes'
  /** Withdraws its entry with a delete that does not require the key's last write to be its own (TAP-REG-027). */
  | 'blind-withdraw'
  /** Joins with a blind put, over the live entry of another process of its agent id (TAP-REG-010). */
  | 'overwrites-live';

const [fault, url, agentId] = process.argv.slice(2) as [RegistryFault, string, string];

const agent = createAgent({
  card: {
    agent_id: agentId,
    name: `broken (${fault})`,
    description: `The reference runtime in a mesh, breaking one rule of the registry: ${fault}.`,
    capabilities: [],
    limits: { max_concurrent_tasks: 16, max_task_seconds: 60, max_message_bytes: 1048576 },
  },
  capabilities: withConformanceCapabilities(),
  shutdownGraceMs: 1000,
  logger: () => {},
});
/** Takes the trace out of the metadata of every message the agent sends. */
const dropTrace = (t: Transport): Transport => {
  const send = t.send.bind(t);
  t.send = (text) => {
    const msg = JSON.parse(text) as { metadata?: Record<string, unknown> };
    if (msg.metadata) {
      delete msg.metadata.trace_id;
      delete msg.metadata.span_id;
    }
    return send(JSON.stringify(msg));
  };
  return t;
};
const listener = await agent.listenNats({ url, ...(fault === 'trace-dropped' ? { wrap: dropTrace } : {}) });
const source: MemberSource = {
  card: agent.card,
  versions: SUPPORTED_VERSIONS,
  endpoints: () => [{ binding: 'nats', url: listener.url }],
  runningTasks: () => (fault === 'load-stuck' ? 0 : agent.stats().activeTasks),
};
const nc = await connect({ servers: url });
/** The entry a hand-written heartbeat writes for `instance`: the agent's card, endpoints and load, every 200 ms. */
const entryOf = (instance: string) => {
  const started = new Date().toISOString();
  return (): RegistryEntry => ({
    agent_id: agentId,
    instance,
    card: agent.card,
    versions: [...SUPPORTED_VERSIONS],
    endpoints: source.endpoints(),
    load: { running_tasks: agent.stats().activeTasks, max_concurrent_tasks: 16 },
    heartbeat_ms: 200,
    ttl_ms: 1000,
    started_at: started,
    updated_at: new Date().toISOString(),
  });
};
let leave = async (): Promise<void> => {};
if (fault === 'leaves-when-overwritten') {
  const registry = await openRegistry(nc);
  const entry = entryOf('leaves-when-overwritten');
  let revision = await registry.create(entry());
  const beat = setInterval(() => {
    registry.update(entry(), revision).then(
      (r) => (revision = r),
      () => clearInterval(beat),
    );
  }, 200);
  leave = async () => {
    clearInterval(beat);
    await registry.withdraw(agentId, revision).catch(() => {});
  };
} else if (fault === 'short-instance' || fault === 'blind-writes' || fault === 'blind-withdraw') {
  const registry = await openRegistry(nc);
  const kv = await new Kvm(nc).open(REGISTRY_BUCKET);
  const entry = entryOf(fault === 'short-instance' ? randomBytes(4).toString('hex') : randomBytes(12).toString('base64url'));
  let revision = await registry.create(entry());
  const beat = setInterval(() => {
    const write = fault === 'blind-writes' ? kv.put(agentId, JSON.stringify(entry())) : registry.update(entry(), revision);
    write.then(
      (r) => (revision = r),
      () => {},
    );
  }, 200);
  leave = async () => {
    clearInterval(beat);
    if (fault === 'blind-withdraw') await kv.delete(agentId);
    else await registry.withdraw(agentId, revision).catch(() => {});
  };
} else if (fault === 'overwrites-live') {
  const registry = await openRegistry(nc);
  const kv = await new Kvm(nc).open(REGISTRY_BUCKET);
  const entry = entryOf(randomBytes(12).toString('base64url'));
  let revision = await kv.put(agentId, JSON.stringify(entry()));
  const beat = setInterval(() => {
    registry.update(entry(), revision).then(
      (r) => (revision = r),
      () => {},
    );
  }, 200);
  leave = async () => {
    clearInterval(beat);
    await registry.withdraw(agentId, revision).catch(() => {});
  };
} else if (fault === 'never-heartbeats') {
  const registry = await openRegistry(nc);
  const now = new Date().toISOString();
  const revision = await registry.create({
    agent_id: agentId,
    instance: 'never-renewed',
    card: agent.card,
    versions: [...SUPPORTED_VERSIONS],
    endpoints: source.endpoints(),
    load: { running_tasks: 0, max_concurrent_tasks: 16 },
    heartbeat_ms: 200,
    ttl_ms: 1000,
    started_at: now,
    updated_at: now,
  });
  leave = () => registry.withdraw(agentId, revision);
} else {
  const membership = await joinMesh({ nc, heartbeatMs: 200, ttlMs: 1000 }, source);
  if (fault !== 'left-behind') leave = () => membership.leave();
}
process.on('SIGTERM', () => {
  void (async () => {
    await leave();
    await agent.shutdown('SIGTERM');
    process.exit(0);
  })();
});
process.stdout.write(`${listener.url}\n`);
