/** tapctl mesh agents and discover, for people and with --json, against a real registry. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import type { AgentCard } from '../../../schemas/src/index.ts';
import type { RegistryEntry } from '../../mesh/entry.ts';
import { openRegistry } from '../../mesh/registry.ts';
import { signEntry } from '../../mesh/signature.ts';
import { newSigningKey, trustOf } from '../../trust.ts';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Kvm } from '@nats-io/kv';
import { NO_NATS_SERVER, natsServerInstalled, startNatsServer, type NatsServer } from '../../transports/nats/nats-server.testkit.ts';
import { lacks, needing } from '../../../test/system-tools.testkit.ts';
import { tapctl } from '../tapctl.testkit.ts';

if (!natsServerInstalled) console.warn(NO_NATS_SERVER);

// biome-ignore lint/suspicious/noExplicitAny: the JSON a command printed, read by field
function entry(agentId: string, version: string, over: Partial<RegistryEntry> = {}): RegistryEntry {
  const card: AgentCard = {
    agent_id: agentId,
    name: agentId,
    description: 'a test agent',
    capabilities: [
      {
        name: 'code.write',
        version,
        description: 'writes code',
        input_formats: ['text'],
        output_formats: ['text'],
        streaming: false,
        side_effects: false,
      },
    ],
    limits: { max_concurrent_tasks: 5, max_task_seconds: 60, max_message_bytes: 1048576 },
  };
  const now = new Date().toISOString();
  return {
    agent_id: agentId,
    instance: `i-${agentId}`,
    card,
    versions: ['1.0'],
    endpoints: [{ binding: 'nats', url: `nats://127.0.0.1:4222/${agentId}` }],
    load: { running_tasks: 2, max_concurrent_tasks: 5 },
    heartbeat_ms: 1000,
    ttl_ms: 30_000,
    started_at: now,
    updated_at: now,
    ...over,
  };
}

describe.skipIf(lacks('nats-server'))(needing('nats-server', 'tapctl mesh (spec: registry)'), () => {
  let server: NatsServer;
  let nc: NatsConnection;
  beforeAll(async () => {
    server = await startNatsServer();
    nc = await connect({ servers: server.url });
  });
  afterAll(async () => {
    await nc?.close();
    await server?.stop();
  });

  it('says so when the server holds no registry yet', async () => {
    const r = await tapctl('mesh', 'agents', '--nats', server.url);
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/holds no mesh registry/);
  });

  it('lists the live agents, and finds those that offer a capability in a version range', async () => {
    const registry = await openRegistry(nc);
    await registry.create(entry('coder.one', '1.4.0'));
    await registry.create(entry('coder.two', '2.0.0', { endpoints: [{ binding: 'websocket', url: 'ws://127.0.0.1:1/tap' }] }));
    await registry.create(entry('coder.gone', '1.5.0', { ttl_ms: 200 }));
    await new Promise((r) => setTimeout(r, 250));

    const agents = await tapctl('mesh', 'agents', '--nats', server.url, '--json');
    expect(agents.code).toBe(0);
    expect(agents.json().map((e: { agent_id: string }) => e.agent_id)).toEqual(['coder.one', 'coder.two']);
    expect(agents.json()[0]).toMatchObject({ load: { running_tasks: 2, max_concurrent_tasks: 5 }, revision: expect.any(Number) });
    // The server option of `tapctl nats` works here too, and so does the nats tool's $NATS_URL.
    const ids = (r: { json: () => { agent_id: string }[] }) => r.json().map((e) => e.agent_id);
    expect(ids(await tapctl('mesh', 'agents', '-s', server.url, '--json'))).toEqual(['coder.one', 'coder.two']);
    const saved = { tap: process.env.TAP_NATS_URL, nats: process.env.NATS_URL };
    delete process.env.TAP_NATS_URL;
    process.env.NATS_URL = server.url;
    try {
      expect(ids(await tapctl('mesh', 'agents', '--json'))).toEqual(['coder.one', 'coder.two']);
    } finally {
      if (saved.tap !== undefined) process.env.TAP_NATS_URL = saved.tap;
      if (saved.nats === undefined) delete process.env.NATS_URL;
      else process.env.NATS_URL = saved.nats;
    }
    const people = await tapctl('mesh', 'agents', '--nats', server.url);
    expect(people.out).toMatch(/2 agents in the mesh/);
    expect(people.out).toMatch(/coder\.one +2\/5 tasks/);
    expect(people.out).toMatch(/capabilities: code\.write@1\.4\.0/);

    const found = await tapctl('mesh', 'discover', 'code.write', '--version', '^1.2', '--nats', server.url, '--json');
    expect(found.json().map((e: { agent_id: string }) => e.agent_id)).toEqual(['coder.one']);
    const ws = await tapctl('mesh', 'discover', 'code.write', '--binding', 'websocket', '--nats', server.url);
    expect(ws.out).toMatch(/1 agent offers code\.write\n +code\.write@2\.0\.0 +coder\.two/);
    const none = await tapctl('mesh', 'discover', 'code.write', '--version', '>=3', '--nats', server.url);
    expect([none.code, none.err]).toEqual([1, 'No live agent in the mesh offers code.write >=3.\n']);
  });

  it('refuses an unreadable version range or binding as a usage error', async () => {
    const range = await tapctl('mesh', 'discover', 'code.write', '--version', 'newest', '--nats', server.url);
    expect(range.code).toBe(2);
    expect(range.err).toMatch(/cannot read "newest"/);
    const binding = await tapctl('mesh', 'discover', 'code.write', '--binding', 'stdio', '--nats', server.url);
    expect(binding.code).toBe(2);
    expect(binding.err).toMatch(/--binding stdio is not a binding with endpoints/);
  });

  it('with --trust lists only signed agents and the other values as refused, with the reason (spec: registry#signatures)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tapctl-trust-'));
    try {
      const key = newSigningKey('signed.one');
      writeFileSync(join(dir, 'trust.json'), JSON.stringify(trustOf([key])));
      writeFileSync(join(dir, 'broken.json'), '{"principals": {"signed.one": {}}}');
      const registry = await openRegistry(nc);
      await registry.create(signEntry(entry('signed.one', '1.4.0'), key));
      await registry.create(entry('forger.one', '1.4.0', { endpoints: [{ binding: 'nats', url: 'nats://127.0.0.1:9/forger.one' }] }));
      const trusted = await tapctl('mesh', 'agents', '--nats', server.url, '--trust', join(dir, 'trust.json'));
      expect(trusted.code).toBe(0);
      expect(trusted.out).toMatch(/^1 agent in the mesh, each signed by its key in the trust file\n/);
      expect(trusted.out).toMatch(/signed\.one +2\/5 tasks/);
      expect(trusted.out).toMatch(
        /\n\d+ values refused \(invalid, or not signed by the agent's key in the trust file\); requesters take them as absent:\n(.*\n)* {2}forger\.one +instance i-forger\.one +nats:\/\/127\.0\.0\.1:9\/forger\.one +the trust file has no key for forger\.one\n/,
      );
      const json = await tapctl('mesh', 'agents', '--nats', server.url, '--trust', join(dir, 'trust.json'), '--json');
      expect(json.json().map((e: { agent_id: string }) => e.agent_id)).toEqual(['signed.one']);
      expect(json.err).toMatch(/forger\.one .*the trust file has no key for forger\.one/);
      const found = await tapctl('mesh', 'discover', 'code.write', '--nats', server.url, '--trust', join(dir, 'trust.json'), '--json');
      expect(found.json().map((e: { agent_id: string }) => e.agent_id)).toEqual(['signed.one']);
      const broken = await tapctl('mesh', 'agents', '--nats', server.url, '--trust', join(dir, 'broken.json'));
      expect([broken.code, broken.err]).toEqual([1, expect.stringMatching(/principal signed\.one has no Ed25519 public_key/)]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('prints within its bounds and says on stderr when the listing was cut short (spec: registry#bounds)', async () => {
    const kv = await new Kvm(nc).open('TAP_REGISTRY');
    await Promise.all(Array.from({ length: 300 }, (_, i) => kv.put(`flood.a${i}`, JSON.stringify(entry(`flood.a${i}`, '1.0.0')))));
    const cut = await tapctl('mesh', 'agents', '--nats', server.url, '--max-entries', '50', '--json');
    expect([cut.code, cut.json().length]).toEqual([0, expect.any(Number)]);
    expect(cut.json().length).toBeLessThanOrEqual(50);
    expect(cut.err).toMatch(
      /^tapctl: the listing was cut short after \d+ values \(it read 50 keys, the most a listing reads\): agents beyond them may be missing\. Raise --max-entries or --budget-ms, or give --trust FILE/m,
    );
    const whole = await tapctl('mesh', 'agents', '--nats', server.url, '--json');
    expect(whole.err).toBe('');
    expect(whole.json().length).toBeGreaterThanOrEqual(300);
    const bad = await tapctl('mesh', 'agents', '--nats', server.url, '--max-entries', '0');
    expect([bad.code, bad.err]).toEqual([2, expect.stringMatching(/--max-entries 0 is not a whole number of at least 1/)]);
  });
});
