import { describe, expect, it } from 'vitest';
import { connect } from '../client/index.ts';
import { createMemoryPair } from '../transports/memory.ts';
import { createAgent } from './agent.ts';
import { conformanceFromEnv, keysFromEnv, mergeKeys } from './environment.ts';
import type { AgentOptions } from './options.ts';

const KEY = Buffer.alloc(32, 7).toString('base64url');
const ENV_KEY = { TAP_HMAC_KEY_ID: 'conform', TAP_HMAC_KEY: KEY, TAP_HMAC_PEER: 'tap-conform.hmac' };

const options = (extra: Partial<AgentOptions> = {}): AgentOptions => ({
  card: {
    agent_id: 'example.words',
    name: 'Words',
    description: 'Counts words.',
    capabilities: [],
    limits: { max_concurrent_tasks: 8, max_task_seconds: 60, max_message_bytes: 1_048_576 },
  },
  capabilities: {
    'text.count': {
      capability: {
        name: 'text.count',
        version: '1.0.0',
        description: 'Counts.',
        input_formats: ['json'],
        output_formats: ['json'],
        streaming: false,
        side_effects: false,
      },
      handler: (input: { text: string }) => ({ words: input.text.split(' ').length }),
    },
  },
  logger: () => {},
  ...extra,
});

const offered = (o: AgentOptions) => createAgent(o).card.capabilities.map((c) => c.name);

describe('the environment of an agent process (spec: conformance#key-provisioning, conformance#test-capabilities)', () => {
  it('reads the conformance key from all three TAP_HMAC_* variables, none when none is set, and names what is missing', () => {
    expect(keysFromEnv(ENV_KEY)).toEqual([{ key_id: 'conform', key: KEY, peer: 'tap-conform.hmac' }]);
    expect(keysFromEnv({})).toEqual([]);
    expect(() => keysFromEnv({ TAP_HMAC_KEY_ID: 'k' })).toThrow(/TAP_HMAC_KEY and TAP_HMAC_PEER missing/);
  });

  it('takes TAP_CONFORMANCE=1 as a yes, unset or 0 as a no, and refuses anything else with a sentence', () => {
    expect(conformanceFromEnv({ TAP_CONFORMANCE: '1' })).toBe(true);
    expect(conformanceFromEnv({})).toBe(false);
    expect(conformanceFromEnv({ TAP_CONFORMANCE: '0' })).toBe(false);
    expect(() => conformanceFromEnv({ TAP_CONFORMANCE: 'maybe' })).toThrow(/neither 1 nor 0/);
  });

  it('offers the conformance capabilities only when started for certification, or when told to', () => {
    expect(offered(options({ env: {} }))).toEqual(['text.count']);
    const certifying = offered(options({ env: { TAP_CONFORMANCE: '1' } }));
    expect(certifying).toContain('text.count');
    expect(certifying).toEqual(expect.arrayContaining(['tap.test.echo', 'tap.test.plan', 'tap.test.counter', 'tap.test.guarded']));
    expect(offered(options({ env: { TAP_CONFORMANCE: '1' }, conformance: false }))).toEqual(['text.count']);
    expect(offered(options({ env: false, conformance: true }))).toContain('tap.test.sleep');
  });

  it('offers the conformance extension of 1.1 when started for certification, and only then', async () => {
    for (const [env, uses] of [
      [{ TAP_CONFORMANCE: '1' }, ['urn:tap:test:stamp']],
      [{}, []],
    ] as const) {
      const agent = createAgent(options({ env }));
      const [a, b] = createMemoryPair();
      agent.attach(a);
      const client = await connect(b, { agentId: 'example.requester', extensions: [{ uri: 'urn:tap:test:stamp' }] });
      expect(client.handshake.extensions).toEqual(uses);
      await client.close();
      await agent.shutdown();
    }
  });

  it('merges the environment key with the given keys; one id naming two keys is an error', () => {
    const given = [{ key_id: 'own', key: KEY, peer: 'someone' }];
    expect(mergeKeys(given, keysFromEnv(ENV_KEY)).map((k) => k.key_id)).toEqual(['own', 'conform']);
    expect(mergeKeys(keysFromEnv(ENV_KEY), keysFromEnv(ENV_KEY))).toHaveLength(1);
    expect(() => mergeKeys([{ key_id: 'conform', key: KEY, peer: 'other' }], keysFromEnv(ENV_KEY))).toThrow(/another key or peer/);
  });

  it('holds the key of TAP_HMAC_* for the sessions it serves: a requester signing with it completes a task', async () => {
    const agent = createAgent(options({ env: ENV_KEY }));
    const [a, b] = createMemoryPair();
    agent.attach(a);
    const client = await connect(b, { agentId: 'tap-conform.hmac', requires: ['text.count'], keys: { keyId: 'conform', key: KEY } });
    const result = await client.submit('text.count', { text: 'one two' }).result;
    expect(result.output).toEqual({ words: 2 });
    await client.close();
    await agent.shutdown();
  });

  it('refuses an unsigned session from the peer the environment key is bound to, and reads nothing with env: false', async () => {
    for (const [env, refused] of [
      [ENV_KEY, true],
      [false, false],
    ] as const) {
      const agent = createAgent(options({ env }));
      const [a, b] = createMemoryPair();
      agent.attach(a);
      const opened = connect(b, { agentId: 'tap-conform.hmac', requires: ['text.count'] });
      if (refused) await expect(opened).rejects.toThrow(/INTEGRITY|integrity|sign/i);
      else await (await opened).close();
      await agent.shutdown();
    }
  });
});
