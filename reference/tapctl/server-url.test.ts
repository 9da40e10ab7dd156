/** One server option for `tapctl nats …` and `tapctl mesh …` (server-url.ts). */
import { beforeAll, describe, expect, it } from 'vitest';
import { runCli } from './cli.ts';
import { BUILTIN_COMMANDS } from './commands.ts';
import { findCommand, registerCommand } from './registry.ts';
import { DEFAULT_NATS_URL, natsServerUrl } from './server-url.ts';

beforeAll(() => {
  for (const c of BUILTIN_COMMANDS) if (!findCommand(c.name)) registerCommand(c);
});

describe('the NATS server of a tapctl command', () => {
  it('is --server or --nats, else $TAP_NATS_URL, else $NATS_URL, else the local default', () => {
    const env = { TAP_NATS_URL: 'nats://tap:1', NATS_URL: 'nats://cli:2' };
    expect(natsServerUrl({ server: 'nats://s:3' }, env)).toBe('nats://s:3');
    expect(natsServerUrl({ nats: 'nats://n:4' }, env)).toBe('nats://n:4');
    expect(natsServerUrl({ server: 'nats://same:5', nats: 'nats://same:5' }, env)).toBe('nats://same:5');
    expect(natsServerUrl({}, env)).toBe('nats://tap:1');
    expect(natsServerUrl({}, { NATS_URL: 'nats://cli:2' })).toBe('nats://cli:2');
    expect(natsServerUrl({}, {})).toBe(DEFAULT_NATS_URL);
  });

  it('refuses two different servers as a usage error, in both command groups', async () => {
    expect(() => natsServerUrl({ server: 'nats://a:1', nats: 'nats://b:2' }, {})).toThrow(
      /--server nats:\/\/a:1 and --nats nats:\/\/b:2 name two servers/,
    );
    for (const argv of [
      ['nats', 'status', '--server', 'nats://a:1', '--nats', 'nats://b:2'],
      ['mesh', 'agents', '-s', 'nats://a:1', '--nats', 'nats://b:2'],
    ]) {
      let err = '';
      const code = await runCli(argv, { io: { out: () => {}, err: (t) => void (err += t) } });
      expect(code, argv.join(' ')).toBe(2);
      expect(err).toMatch(/name two servers/);
    }
  });

  it('is taken by both names in both command groups: the help of each says so', async () => {
    for (const group of ['nats status', 'mesh agents', 'mesh discover']) {
      let out = '';
      await runCli([...group.split(' '), '--help'], { io: { out: (t) => void (out += t), err: () => {} } });
      expect(out, group).toMatch(/--server/);
      expect(out, group).toMatch(/--nats/);
      expect(out, group).toMatch(/\$TAP_NATS_URL,\s+else \$NATS_URL/);
    }
  });
});
