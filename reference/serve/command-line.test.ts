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

  it('reads the heartbeat the agent proposes, within the range of heartbeat_ms (spec: limits#heartbeats)', () => {
    expect(serve('--heartbeat-ms', '1000')).toMatchObject({ heartbeatMs: 1000 });
    expect(serve('--heartbeat-ms', '60000')).toMatchObject({ heartbeatMs: 60000 });
    expect(refused('--heartbeat-ms', '999')).toThrow(/--heartbeat-ms 999 is not a whole number from 1000 to 60000/);
    expect(refused('--heartbeat-ms', '1e3')).toThrow(UsageError);
  });

  it('reads the monitoring port and the audit file, and refuses their companions alone', () => {
    expect(serve('--metrics-port', '9464', '--metrics-host', '0.0.0.0', '--audit-file', 'a.jsonl', '--audit-keep', '3')).toMatchObject({
      metrics: { port: 9464, host: '0.0.0.0' },
      audit: { file: 'a.jsonl', keep: 3 },
    });
    expect(refused('--metrics-port', '70000')).toThrow(/--metrics-port 70000 is not a whole number from 0 to 65535/);
    expect(refused('--metrics-host', '0.0.0.0')).toThrow(/give --metrics-port PORT too/);
    expect(refused('--audit-max-bytes', '4096')).toThrow(/give --audit-file FILE too/);
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

  it('reads the signing key and the trust file of signed durable records (spec: bindings-nats#signed-records)', () => {
    expect(serve('--nats', 'nats://h:1', '--durable', '--signing-key', 'k.json', '--trust', 't.json')).toMatchObject({
      signingKey: 'k.json',
      trust: 't.json',
    });
    expect(refused('--nats', 'nats://h:1', '--durable', '--trust', 't.json')).toThrow(/--trust needs --signing-key/);
    expect(refused('--nats', 'nats://h:1', '--signing-key', 'k.json', '--trust', 't.json')).toThrow(/give --durable too/);
    expect(refused('--signing-key', 'k.json')).toThrow(/give --nats URL too/);
  });

  it('refuses what it cannot serve with one sentence', () => {
    expect(refused('--bogus')).toThrow(UsageError);
    expect(refused('--listen', 'http://x')).toThrow(/needs a ws:\/\/ or wss:\/\/ URL/);
    expect(refused('--listen', 'ws://h:1', '--nats', 'nats://h:2')).toThrow(/give one of them/);
    expect(refused('--durable')).toThrow(/give --nats URL too/);
    expect(refused('--lease-ms', '100')).toThrow(/belong to --durable/);
    expect(refused('--nats', 'nats://h:1', '--durable', '--lease-ms', '5.5')).toThrow(/not a whole number/);
    expect(refused('--mesh-ttl-ms', '100')).toThrow(/give --mesh URL too/);
    expect(refused('--mesh-key', 'agent.key.json')).toThrow(/give --mesh URL too/);
    expect(refused('--trace', 'x.jsonl')).toThrow(/--nats URL or --mesh URL/);
    expect(refused('--grace-ms', '-1')).toThrow(UsageError);
  });

  it('reads TLS files for wss:// and NATS, and JWT settings, and refuses them where they cannot apply (spec: security#transport-security)', () => {
    const tls = ['--tls-cert', 'agent.pem', '--tls-key', 'agent.key'];
    expect(serve('--listen', 'wss://127.0.0.1:8443/tap', ...tls, '--tls-ca', 'ca.pem')).toMatchObject({
      tls: { cert: 'agent.pem', key: 'agent.key', ca: 'ca.pem' },
    });
    expect(serve('--nats', 'tls://127.0.0.1:4222', ...tls, '--tls-ca', 'ca.pem').tls).toEqual({
      cert: 'agent.pem',
      key: 'agent.key',
      ca: 'ca.pem',
    });
    expect(serve('--nats', 'tls://127.0.0.1:4222', '--tls-ca', 'ca.pem').tls).toEqual({ ca: 'ca.pem' });
    expect(serve('--jwt-issuer', 'https://idp.test', '--jwt-audience', 'a.b', '--jwt-keys', 'jwks.json').jwt).toEqual({
      issuer: 'https://idp.test',
      audience: 'a.b',
      keys: 'jwks.json',
    });
    expect(refused('--listen', 'wss://127.0.0.1:8443/tap')).toThrow(/--tls-cert FILE --tls-key FILE/);
    expect(refused('--listen', 'wss://127.0.0.1:8443/tap', '--tls-cert', 'agent.pem')).toThrow(/--tls-cert FILE --tls-key FILE/);
    expect(refused('--nats', 'tls://127.0.0.1:4222', '--tls-key', 'agent.key')).toThrow(/go together/);
    expect(refused('--listen', 'ws://127.0.0.1:8787/tap', ...tls)).toThrow(/give --listen wss:\/\/127\.0\.0\.1:8787\/tap instead/);
    expect(refused(...tls)).toThrow(/over stdio there is no TLS/);
    expect(refused('--jwt-issuer', 'https://idp.test')).toThrow(/go together: give all three/);
  });
});
