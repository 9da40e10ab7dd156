/**
 * The attacks on the mesh registry found on 2026-12-04, as regression tests against the compiled
 * tap-reference-agent and a real nats-server (spec: registry#signatures, registry#bounds):
 *
 * - registry-takeover: one forged write of a live agent's key used to make it leave the mesh for
 *   good while the forger's endpoint was listed and routed to. Now the agent writes its entry
 *   again, and a requester holding the trust file never takes the forgery.
 * - registry-flood: thousands of forged entries copying a real card used to be offered by
 *   discovery, and a listing made while they aged out timed out or missed the live agent. Now the
 *   bucket is bounded, a listing stops at its bounds and says so, and with the trust file every
 *   listing finds the live agent and none of the forged ones.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { jetstreamManager } from '@nats-io/jetstream';
import { Kvm, type KV } from '@nats-io/kv';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectMesh } from '../reference/mesh/connect.ts';
import type { RegistryEntry } from '../reference/mesh/entry.ts';
import { openRegistry, type Registry } from '../reference/mesh/registry.ts';
import { NO_NATS_SERVER, natsServerInstalled, startNatsServer, type NatsServer } from '../reference/transports/nats/nats-server.testkit.ts';
import { newSigningKey, trustOf } from '../reference/trust.ts';
import { lacks, needing } from './system-tools.testkit.ts';
import { tapctl } from '../reference/tapctl/tapctl.testkit.ts';

if (!natsServerInstalled) console.warn(NO_NATS_SERVER);

const BIN = fileURLToPath(new URL('../bin/tap-reference-agent.mjs', import.meta.url));
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
/** Where the forger points the entries it writes: a port nothing listens on. */
const NOWHERE = (agentId: string): string => `nats://127.0.0.1:9/${agentId}`;
/** The flood: enough forged entries to outnumber any listing bound the tests set, cheap to write. */
const FLOOD = 3000;
/** The registry bucket's max_age in these tests: a flooded entry is gone this long after it was written. */
const MAX_AGE_MS = 4000;

interface AgentProcess {
  child: ChildProcess;
  url: string;
  stderr: () => string;
}

async function startAgent(args: string[]): Promise<AgentProcess> {
  const child = spawn(process.execPath, [BIN, '--grace-ms', '1000', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let err = '';
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const [url] = (await once(createInterface({ input: child.stdout! }), 'line')) as [string];
  return { child, url, stderr: () => err };
}

// biome-ignore lint/suspicious/noExplicitAny: the JSON a command printed, read by field
/** Polls `read` every 50 ms until `check` holds of it; fails after `ms`. */
async function until<T>(read: () => Promise<T>, check: (v: T) => boolean, ms = 10_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await read();
    if (check(v)) return v;
    if (Date.now() > end) throw new Error(`the condition did not hold in time; last seen: ${JSON.stringify(v)?.slice(0, 300)}`);
    await sleep(50);
  }
}

describe.skipIf(lacks('nats-server'))(needing('nats-server', 'a registry nobody can take over or flood (spec: registry)'), () => {
  let server: NatsServer;
  let nc: NatsConnection;
  let kv: KV;
  let registry: Registry;
  let victim: AgentProcess;
  let plain: AgentProcess;
  const dir = mkdtempSync(join(tmpdir(), 'tap-registry-attacks-'));
  const key = newSigningKey('tap.victim');
  const trust = trustOf([key]);
  const trustFile = join(dir, 'trust.json');

  beforeAll(async () => {
    writeFileSync(join(dir, 'victim.key.json'), JSON.stringify(key));
    writeFileSync(trustFile, JSON.stringify(trust));
    server = await startNatsServer();
    nc = await connect({ servers: server.url });
    // The bucket as an agent creates it, with a short max_age so that the flood ages out within the test.
    registry = await openRegistry(nc, { maxAgeMs: MAX_AGE_MS });
    kv = await new Kvm(nc).open(registry.bucket);
    // Renewed every 500 ms, each entry lives 3.5 s (the bucket's max_age allows 4): an agent whose
    // heartbeat a loaded machine delays by a few beats stays live, as discovery must find it.
    const heartbeat = ['--mesh', server.url, '--mesh-heartbeat-ms', '500', '--mesh-ttl-ms', '3500'];
    [victim, plain] = await Promise.all([
      startAgent([...heartbeat, '--agent-id', 'tap.victim', '--mesh-key', join(dir, 'victim.key.json')]),
      startAgent([...heartbeat, '--agent-id', 'tap.plain']),
    ]);
  }, 30_000);
  afterAll(async () => {
    for (const a of [victim, plain]) if (a && a.child.exitCode === null) a.child.kill('SIGKILL');
    await nc?.close();
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Writes `value` over the key's last write, again if the agent's own write came between. */
  async function forge(agentId: string, value: RegistryEntry): Promise<void> {
    for (let i = 0; ; i++) {
      try {
        await kv.update(agentId, JSON.stringify(value), (await registry.lastRevision(agentId))!);
        return;
      } catch (err) {
        if (i > 20 || !/wrong last sequence/.test((err as Error).message)) throw err;
      }
    }
  }

  it('registry-takeover: a forged write of a signed agent’s key is never routed to, and the agent keeps its entry (TAP-REG-018, TAP-REG-053)', async () => {
    const mesh = await connectMesh(server.url, { agentId: 'attack.requester', trust });
    try {
      const own = (await registry.get('tap.victim'))!.entry;
      const forged = {
        ...own,
        instance: 'attacker',
        heartbeat_ms: 20_000,
        ttl_ms: 55_000,
        endpoints: [{ binding: 'nats' as const, url: NOWHERE('tap.victim') }],
        updated_at: new Date().toISOString(),
      };
      await forge('tap.victim', forged);
      // While the forgery stands, the requester holding the trust file still routes to the agent itself.
      const task = await mesh.task('tap.test.echo', { text: 'still here' });
      expect((await task.result).status).toBe('completed');
      expect(task.agentId).toBe('tap.victim');
      expect((await mesh.discover({ capability: 'tap.test.echo' })).map((e) => e.endpoints[0]?.url)).toEqual([victim.url]);
      // The agent writes its own entry again within a heartbeat or two, and keeps renewing it.
      const back = await until(
        () => registry.get('tap.victim'),
        (r) => r?.entry.instance === own.instance,
      );
      expect(back?.entry.endpoints).toEqual([{ binding: 'nats', url: victim.url }]);
      await sleep(1500);
      const later = (await registry.get('tap.victim'))!;
      expect([later.entry.instance, later.revision > back!.revision]).toEqual([own.instance, true]);
      expect(victim.child.exitCode).toBe(null);
      expect(victim.stderr()).toMatch(
        /another process wrote an entry of instance attacker under the registry key of tap\.victim, which does not verify with this agent's key; this agent writes its own entry again/,
      );
      expect(victim.stderr()).not.toMatch(/leaves the mesh/);
    } finally {
      await mesh.close();
    }
  });

  it('registry-takeover: an agent without a key whose live entry is overwritten writes it again instead of leaving for good (TAP-REG-018)', async () => {
    const own = (await registry.get('tap.plain'))!.entry;
    await forge('tap.plain', { ...own, instance: 'attacker', endpoints: [{ binding: 'nats', url: NOWHERE('tap.plain') }] });
    const back = await until(
      () => registry.get('tap.plain'),
      (r) => r?.entry.instance === own.instance,
    );
    expect(back?.entry.endpoints).toEqual([{ binding: 'nats', url: plain.url }]);
    expect(plain.child.exitCode).toBe(null);
  });

  it('registry-flood: the bucket is bounded, discovery with the trust file offers only the live agent, and every listing made while the flood ages out answers within its bounds', {
    timeout: 60_000,
  }, async () => {
    const { config } = await (await jetstreamManager(nc)).streams.info(`KV_${registry.bucket}`);
    expect([config.max_msgs, config.max_bytes, config.max_msg_size]).toEqual([10_000, 64 * 1024 * 1024, 65_536]);
    const real = (await registry.get('tap.victim'))!.entry;
    const flood = async (): Promise<void> => {
      for (let i = 0; i < FLOOD; i += 200)
        await Promise.all(
          Array.from({ length: 200 }, (_, k) => {
            const id = `flood.a${i + k}`;
            return kv.put(
              id,
              JSON.stringify({ ...real, agent_id: id, instance: `x${i + k}`, ttl_ms: 3500, card: { ...real.card, agent_id: id } }),
            );
          }),
        );
    };
    await flood();
    let floodEnd = Date.now();
    // A listing capped at 100 values, as people run it: no flooded entry passes the trust file; one
    // cut short at its bound may stop before the victim's latest renewal (written after the flood),
    // and says it was cut short.
    const listCapped = async (): Promise<boolean> => {
      const capped = await tapctl('mesh', 'agents', '--nats', server.url, '--trust', trustFile, '--max-entries', '100', '--json');
      expect(capped.code).toBe(0);
      // Cut at its bound of 100 keys: the values it read may be one or two more, when the victim's
      // renewal (every 500 ms) arrives again during a slow listing.
      const cut = /cut short after \d+ values \(it read 100 keys/.test(capped.err);
      const offered = capped.json().map((e: { agent_id: string }) => e.agent_id);
      if (cut)
        expect(
          offered.filter((id: string) => id !== 'tap.victim'),
          'a capped listing cut short',
        ).toEqual([]);
      else expect(offered, 'a capped listing that read the whole bucket').toEqual(['tap.victim']);
      return cut;
    };
    // At once, while the flood fills the bucket (max_age 4 s), the listing meets it and stops at its bound.
    // A listing that ended only after the flood's 4 s (a loaded machine's start of tapctl) may have
    // met nothing of it: the flood is written again, twice at most.
    let met = await listCapped();
    for (let again = 0; !met && again < 2 && Date.now() - floodEnd > MAX_AGE_MS; again++) {
      await flood();
      floodEnd = Date.now();
      met = await listCapped();
    }
    expect(met).toBe(true);
    const mesh = await connectMesh(server.url, { agentId: 'flood.requester', trust });
    try {
      // Listings until well after the flood has aged out of the bucket.
      const until = Date.now() + 6000;
      let rounds = 0;
      while (Date.now() < until) {
        await listCapped();
        const whole = await tapctl('mesh', 'discover', 'tap.test.echo', '--nats', server.url, '--json');
        expect([whole.code, whole.err], `tapctl mesh discover, round ${rounds + 1}`).toEqual([0, '']);
        expect(
          whole.json().map((e: { agent_id: string }) => e.agent_id),
          `tapctl mesh discover, round ${rounds + 1}`,
        ).toContain('tap.victim');
        expect(
          (await mesh.discover({ capability: 'tap.test.echo' })).map((e) => e.agent_id),
          `the requester's discovery, round ${rounds + 1}`,
        ).toEqual(['tap.victim']);
        rounds++;
      }
      expect(rounds, 'rounds of listings in 6 s').toBeGreaterThanOrEqual(2);
      // The flood is gone by the end.
      expect((await registry.survey({})).records.map((r) => r.entry.agent_id).sort(), 'the live entries after the flood').toEqual([
        'tap.plain',
        'tap.victim',
      ]);
      const people = await tapctl('mesh', 'agents', '--nats', server.url, '--trust', trustFile);
      expect(people.out, `tapctl mesh agents: exit ${people.code}; stderr: ${people.err}`).toMatch(
        /^1 agent in the mesh, each signed by its key in the trust file\n/,
      );
      expect(people.out).toMatch(
        /1 value refused .*\n {2}tap\.plain +instance \S+ +nats:\/\/\S+ +the trust file has no key for tap\.plain\n/,
      );
    } finally {
      await mesh.close();
    }
  });
});
