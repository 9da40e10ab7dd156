import { describe, expect, it } from 'vitest';
import { parseCommandLine, UsageError } from './command-line.ts';

const serve = (...argv: string[]) => parseCommandLine(argv).serve;
const refused =
  (...argv: string[]) =>
  () =>
    parseCommandLine(argv);

describe('the command line of an agent process', () => {
  it('serves stdio with no option, and reads each binding and setting', () => {
    expect(serve()).toEqual({ help: false });
    expect(serve('--listen', 'ws://127.0.0.1:0/tap').listen?.href).toBe('ws://127.0.0.1:0/tap');
    expect(serve('--nats', 'nats://127.0.0.1:4222', '--durable', '--lease-ms', '3000')).toMatchObject({
      nats: 'nats://127.0.0.1:4222',
      durable: { leaseMs: 3000, maxDeliver: 5 },
    });
    expect(serve('--state-dir', '/tmp/s', '--grace-ms', '0', '--resume-window-ms', '1000')).toMatchObject({
      stateDir: '/tmp/s',
      graceMs: 0,
      resumeWindowMs: 1000,
    });
    expect(serve('-h').help).toBe(true);
  });

  it('serves a mesh agent through the registry server unless another binding is named (spec: registry#entry)', () => {
    expect(serve('--mesh', 'nats://127.0.0.1:4222')).toMatchObject({
      nats: 'nats://127.0.0.1:4222',
      mesh: { url: 'nats://127.0.0.1:4222' },
    });
    const ws = serve('--mesh', 'nats://127.0.0.1:4222', '--listen', 'ws://127.0.0.1:0');
    expect(ws.nats).toBeUndefined();
    expect(ws.mesh?.url).toBe('nats://127.0.0.1:4222');
    expect(serve('--mesh', 'nats://127.0.0.1:4222', '--mesh-key', 'agent.key.json').mesh).toEqual({
      url: 'nats://127.0.0.1:4222',
      keyFile: 'agent.key.json',
    });
  });

  it('takes the program’s own options beside its own', () => {
    const { values } = parseCommandLine(['--agent-id', 'a.b', '--listen', 'ws://h:1'], { 'agent-id': { type: 'string' } });
    expect(values['agent-id']).toBe('a.b');
  });

  it('refuses what it cannot serve with one sentence', () => {
    expect(refused('--bogus')).toThrow(UsageError);
    expect(refused('--listen', 'http://x')).toThrow(/needs a ws:\/\/ URL/);
    expect(refused('--listen', 'ws://h:1', '--nats', 'nats://h:2')).toThrow(/give one of them/);
    expect(refused('--durable')).toThrow(/give --nats URL too/);
    expect(refused('--lease-ms', '100')).toThrow(/belong to --durable/);
    expect(refused('--nats', 'nats://h:1', '--durable', '--lease-ms', '5.5')).toThrow(/not a whole number/);
    expect(refused('--mesh-ttl-ms', '100')).toThrow(/give --mesh URL too/);
    expect(refused('--mesh-key', 'agent.key.json')).toThrow(/give --mesh URL too/);
    expect(refused('--trace', 'x.jsonl')).toThrow(/--nats URL or --mesh URL/);
    expect(refused('--grace-ms', '-1')).toThrow(UsageError);
  });
});
