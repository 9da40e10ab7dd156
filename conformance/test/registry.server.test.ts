/**
 * The registry profile against a real nats-server: the reference agent process in a mesh passes
 * it, and each broken agent fails the case of the rule it breaks.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  NO_NATS_SERVER,
  natsServerInstalled,
  startNatsServer,
  type NatsServer,
} from '../../reference/transports/nats/nats-server.testkit.ts';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { newSigningKey, trustOf } from '../../reference/trust.ts';
import { runConformance } from '../run.ts';
import { shellQuote } from '../options.ts';
import type { RegistryFault } from './registry-broken.testkit.ts';
import { compiledScript } from '../../test/compiled.testkit.ts';
import { lacks, needing } from '../../test/system-tools.testkit.ts';

if (!natsServerInstalled) console.warn(NO_NATS_SERVER);

/** Starts a process that prints its URL once ready; resolves with the process and the URL. */
async function serving(args: string[]): Promise<{ child: ChildProcess; url: string }> {
  const [script, ...rest] = args;
  const child = spawn(process.execPath, [compiledScript(script!), ...rest], { stdio: ['ignore', 'pipe', 'ignore'] });
  const [url] = (await once(createInterface({ input: child.stdout! }), 'line')) as [string];
  return { child, url };
}

const FAULTS: Array<[RegistryFault, string]> = [
  ['never-heartbeats', 'registry.heartbeat.renewed'],
  ['load-stuck', 'registry.load.moves'],
  ['left-behind', 'registry.withdraw.shutdown'],
  ['trace-dropped', 'registry.trace.carried'],
  ['unsigned', 'registry.signature.signed'],
  ['leaves-when-overwritten', 'registry.overwrite.reasserts'],
  ['short-instance', 'registry.instance.random'],
  ['blind-writes', 'registry.instance.conditional-writes'],
  ['blind-withdraw', 'registry.withdraw.shutdown'],
  ['overwrites-live', 'registry.instance.taken'],
];

/** The shell command that starts `args` (a script and its arguments) as `serving` does, for --agent-command. */
const command = ([script, ...rest]: string[]): string => [process.execPath, compiledScript(script!), ...rest].map(shellQuote).join(' ');

// The reference agent signs its entry; the trust file names its key and one for the agent that forgets its own.
const referenceKey = newSigningKey('tap.reference-agent');
const trust = trustOf([referenceKey, newSigningKey('tap.registry-unsigned')]);
const keyDir = mkdtempSync(join(tmpdir(), 'tap-registry-keys-'));
const keyFile = join(keyDir, 'reference.key.json');
const REFERENCE_ARGS = ['reference/agents/reference-agent.ts', '--mesh'];
const MESH_ARGS = ['--mesh-heartbeat-ms', '200', '--mesh-ttl-ms', '1000', '--grace-ms', '2000', '--mesh-key', keyFile];

describe.skipIf(lacks('nats-server'))(needing('nats-server', 'tap-conform --registry (spec: registry)'), () => {
  let server: NatsServer;
  let reference: { child: ChildProcess; url: string };
  const broken = new Map<RegistryFault, { child: ChildProcess; url: string }>();
  const children: ChildProcess[] = [];

  beforeAll(async () => {
    server = await startNatsServer();
    writeFileSync(keyFile, JSON.stringify(referenceKey));
    // Every agent starts at once: each process takes a second or two to load.
    const started = await Promise.all([
      serving([...REFERENCE_ARGS, server.url, ...MESH_ARGS]),
      ...FAULTS.map(([fault]) => serving(['conformance/test/registry-broken.testkit.ts', fault, server.url, `tap.registry-${fault}`])),
    ]);
    children.push(...started.map((s) => s.child));
    reference = started[0]!;
    FAULTS.forEach(([fault], i) => broken.set(fault, started[i + 1]!));
  }, 30_000);
  afterAll(async () => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    await server?.stop();
    rmSync(keyDir, { recursive: true, force: true });
  });

  it('certifies the reference agent in a mesh for the registry profile, and it exits 0 on SIGTERM', { timeout: 60_000 }, async () => {
    const { child, url } = reference;
    expect(url).toBe(`${server.url}/tap.reference-agent`);
    const exited = once(child, 'exit');
    const report = await runConformance({
      target: url,
      profiles: ['registry'],
      registry: server.url,
      registryTrust: trust,
      agentPid: child.pid,
      // A second reference process of the same agent id and key, which must refuse to join.
      agentCommand: command([...REFERENCE_ARGS, server.url, ...MESH_ARGS]),
      timeoutMs: 5000,
    });
    expect(
      report.cases.map(
        (c) => `${c.id}: ${c.verdict}${c.verdict === 'PASS' ? '' : ` ${c.detail} (expected ${c.expected}, observed ${c.observed})`}`,
      ),
    ).toEqual([
      'registry.entry.card: PASS',
      'registry.entry.endpoints: PASS',
      'registry.instance.random: PASS',
      'registry.instance.conditional-writes: PASS',
      'registry.instance.taken: PASS',
      'registry.heartbeat.renewed: PASS',
      'registry.heartbeat.margin: PASS',
      'registry.overwrite.reasserts: PASS',
      'registry.load.moves: PASS',
      'registry.trace.carried: PASS',
      'registry.signature.signed: PASS',
      'registry.withdraw.shutdown: PASS',
    ]);
    expect((await exited)[0]).toBe(0);
  });

  it('leaves the registry profile out without --registry, and skips the withdrawal without --agent-pid', { timeout: 30_000 }, async () => {
    const { url } = broken.get('load-stuck')!;
    await expect(runConformance({ target: url, only: ['registry.*'], timeoutMs: 2000 })).rejects.toThrow(/no case matches --only registry/);
    const noPid = await runConformance({ target: url, only: ['registry.withdraw.*'], registry: server.url, timeoutMs: 2000 });
    expect(noPid.cases.map((c) => [c.id, c.verdict])).toEqual([['registry.withdraw.shutdown', 'SKIPPED']]);
    const noCommand = await runConformance({ target: url, only: ['registry.instance.taken'], registry: server.url, timeoutMs: 2000 });
    expect(noCommand.cases.map((c) => [c.id, c.verdict, c.detail])).toEqual([
      ['registry.instance.taken', 'SKIPPED', expect.stringMatching(/pass --agent-command/)],
    ]);
    const noTrust = await runConformance({ target: url, only: ['registry.signature.*'], registry: server.url, timeoutMs: 2000 });
    expect(noTrust.cases.map((c) => [c.id, c.verdict, c.detail])).toEqual([
      ['registry.signature.signed', 'SKIPPED', expect.stringMatching(/pass --registry-trust FILE/)],
    ]);
  });

  it.each(FAULTS)('fails an agent that breaks the rule (%s) in %s', { timeout: 30_000 }, async (fault, id) => {
    const { child, url } = broken.get(fault)!;
    const report = await runConformance({
      target: url,
      only: [id],
      registry: server.url,
      registryTrust: trust,
      agentPid: child.pid,
      // Another process of the broken agent, with its fault.
      agentCommand: command(['conformance/test/registry-broken.testkit.ts', fault, server.url, `tap.registry-${fault}`]),
      timeoutMs: 2000,
    });
    expect(report.cases.map((c) => [c.id, c.verdict])).toEqual([[id, 'FAIL']]);
  });
});
