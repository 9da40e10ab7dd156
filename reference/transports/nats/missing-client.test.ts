/**
 * A NATS use without the NATS client installed (reference/peers.ts): connecting says that the
 * optional peer is missing and gives the npm command, never "could not connect".
 */
import { readFileSync } from 'node:fs';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { MissingPeerError, NATS_PEERS } from '../../peers.ts';

// The test files of a worker share their modules (vitest.config.ts: isolate false), so the client is
// replaced for fresh copies of the modules under test only, and put back afterwards.
vi.resetModules();
vi.doMock('./client.ts', async (original) => {
  const real = await original<typeof import('./client.ts')>();
  return {
    ...real,
    // The client's connect as it behaves when @nats-io/transport-node is not installed.
    connect: () => {
      throw real.missingNatsClient();
    },
  };
});
const { connectNatsTransport } = await import('./connect.ts');
const { createNatsListener } = await import('./listener.ts');
const { connectMesh } = await import('../../mesh/connect.ts');
afterAll(() => {
  vi.doUnmock('./client.ts');
  vi.resetModules();
});

const INSTALL =
  /^the NATS binding needs @nats-io\/transport-node, @nats-io\/jetstream, @nats-io\/kv, optional peer dependencies of tap-agent-protocol that are not installed here: run npm install '@nats-io\/transport-node@/;

describe('a NATS connection without the NATS client installed', () => {
  it('a requester is told the peer is missing and the npm command that installs it', async () => {
    const err = await connectNatsTransport('nats://127.0.0.1:4222', { agentId: 'tap.some-agent' } as never).catch((e: Error) => e);
    expect((err as Error).name).toBe('MissingPeerError');
    expect((err as Error).message).toMatch(INSTALL);
  });

  it('an agent listening on NATS is told the same', async () => {
    const err = await createNatsListener({ url: 'nats://127.0.0.1:4222', agentId: 'tap.some-agent' } as never).catch((e: Error) => e);
    expect((err as Error).name).toBe('MissingPeerError');
    expect((err as Error).message).toMatch(INSTALL);
  });

  it('a mesh requester is told the same', async () => {
    const err = await connectMesh('nats://127.0.0.1:4222', { agentId: 'coordinator' } as never).catch((e: Error) => e);
    expect((err as Error).name).toBe('MissingPeerError');
    expect((err as Error).message).not.toMatch(/could not connect/);
  });
});

describe('the command that installs the NATS client', () => {
  const read = (file: string) => readFileSync(new URL(`../../../${file}`, import.meta.url), 'utf8');

  it('is the one the README and the site print, and asks for the ranges package.json declares', () => {
    const install = new MissingPeerError('the NATS binding', NATS_PEERS).install;
    for (const doc of ['README.md', 'tools/site/content/getting-started.md']) expect(read(doc)).toContain(`\n${install}\n`);
    const peers = (JSON.parse(read('package.json')) as { peerDependencies: Record<string, string> }).peerDependencies;
    expect(NATS_PEERS.map((p) => p.replace(/@([^@]*)$/, ' $1'))).toEqual(
      NATS_PEERS.map((p) => p.replace(/@[^@]*$/, '')).map((name) => `${name} ${peers[name]}`),
    );
  });
});
