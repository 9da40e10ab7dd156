import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { main } from '../cli.ts';
import { replayCommand } from '../run.ts';
import { parseCli, type Config } from '../options.ts';

function capture() {
  let text = '';
  const stream = { write: (s: string) => ((text += s), true), isTTY: false } as unknown as NodeJS.WriteStream;
  return { stream, text: () => text };
}

async function run(...argv: string[]) {
  const out = capture();
  const err = capture();
  const code = await main(argv, out.stream, err.stream);
  return { code, out: out.text(), err: err.text() };
}

/** A port nothing listens on. */
async function closedPort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
  const port = (srv.address() as { port: number }).port;
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}

describe('tap-conform exit codes', () => {
  it('exits 2 with a one-line reason on usage errors', async () => {
    for (const argv of [
      [],
      ['--level', 'always', './a'],
      ['--profile', 'nope', './a'],
      ['--bogus', './a'],
      ['./a', './b'],
      ['--'],
      ['http://x'],
      ['--seed', 'x', './a'],
      ['--path', 'x', './a'],
    ]) {
      const r = await run(...argv);
      expect(r.code, argv.join(' ')).toBe(2);
      expect(r.err.trim().split('\n')).toHaveLength(1);
      expect(r.err).toMatch(/^tap-conform: .+ \(exit 2; see tap-conform --help\)/);
    }
  });

  it('exits 3 when the executable does not exist', async () => {
    const r = await run('./no/such/agent');
    expect(r.code).toBe(3);
    expect(r.err).toBe('tap-conform: could not start ./no/such/agent: no such file (exit 3)\n');
  });

  it('exits 3 when a command is not on PATH', async () => {
    const r = await run('--', 'no-such-command-tc', '--flag');
    expect(r.code).toBe(3);
    expect(r.err).toMatch(/^tap-conform: could not start .*no-such-command-tc.*no such file \(exit 3\)\n$/);
  });

  it('exits 3 when the WebSocket URL is unreachable, after waiting for it (stretched short by --time-scale)', async () => {
    const port = await closedPort();
    const r = await run('--wait', '1', `ws://127.0.0.1:${port}/tap`);
    expect(r.code).toBe(3);
    expect(r.err).toMatch(
      /^tap-conform: waiting up to 1 s for ws:\/\/127\.0\.0\.1:\d+\/tap to accept connections\ntap-conform: could not connect to ws:\/\/127\.0\.0\.1:\d+\/tap: connection refused .*\(exit 3\)\n$/,
    );
  });

  it('lists the cases with id, level, profile, spec anchor and title', async () => {
    const r = await run('--list', '--profile', 'core');
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/^core\.handshake\.complete\s+MUST\s+core\s+handshake#overview\s+/m);
    expect(r.out).not.toMatch(/^tasks\./m);
  });
  it('--skip leaves the matching cases out of the list, beside --only', async () => {
    const all = (await run('--list', '--only', 'core.limits.*')).out.trim().split('\n');
    const kept = (await run('--list', '--only', 'core.limits.*', '--skip', 'core.limits.retention-*,core.limits.duplicate-*')).out
      .trim()
      .split('\n');
    expect(all.some((l) => l.includes('core.limits.retention-per-principal'))).toBe(true);
    expect(kept.some((l) => l.includes('core.limits.retention-per-principal') || l.includes('core.limits.duplicate-table-hostile'))).toBe(
      false,
    );
    expect(kept.length).toBeGreaterThan(0);
    expect(kept.length).toBeLessThan(all.length);
    expect(parseCli(['--skip', 'a.*', '--skip', 'b.c', './x'])).toMatchObject({ ok: true, config: { skip: ['a.*', 'b.c'] } });
  });

  it('takes --agent-command with --registry only, and not empty', () => {
    const url = 'nats://127.0.0.1:4222/my.agent';
    const cmd = "node agent.js --mesh 'nats://127.0.0.1:4222'";
    const p = parseCli(['--registry', 'nats://127.0.0.1:4222', '--agent-command', cmd, url]);
    expect(p).toMatchObject({ ok: true, config: { registry: { url: 'nats://127.0.0.1:4222', agentCommand: cmd } } });
    expect(parseCli(['--agent-command', cmd, url])).toEqual({
      ok: false,
      error: '--agent-command belongs to --registry: give the registry too',
    });
    expect(parseCli(['--registry', 'nats://127.0.0.1:4222', '--agent-command', ' ', url])).toMatchObject({
      ok: false,
      error: expect.stringMatching(/--agent-command is empty/),
    });
  });
});

describe('options', () => {
  it('parses a command after --, profiles, levels and replay flags', () => {
    const p = parseCli([
      '--profile',
      'core',
      '--profile',
      'tasks',
      '--level',
      'must',
      '--seed',
      '7',
      '--only',
      'core.*',
      '--path',
      '1:2',
      '--',
      'python3',
      'agent.py',
      '--verbose',
    ]);
    expect(p.ok).toBe(true);
    const c = (p as { config: Config }).config;
    expect(c.target).toEqual({ kind: 'stdio', command: 'python3', args: ['agent.py', '--verbose'], display: 'python3 agent.py --verbose' });
    expect(c.profiles).toEqual(['core', 'tasks']);
    expect(c.level).toBe('must');
    expect(c.seed).toBe(7);
  });

  it('builds a replay command that runs exactly one case', () => {
    const p = parseCli(['--seed', '9', '--', 'python3', 'my agent.py']);
    const cfg = (p as { config: Config }).config;
    expect(replayCommand(cfg, 'core.x', '--path 3:1')).toBe("tap-conform --seed 9 --path 3:1 --only core.x -- python3 'my agent.py'");
    const ws = (parseCli(['ws://h:1/p', '--hmac-key-id', 'k', '--hmac-key', 'AAAA', '--hmac-peer', 'me.x']) as { config: Config }).config;
    expect(replayCommand(ws, 'core.y')).toBe(
      'tap-conform ws://h:1/p --hmac-key-id k --hmac-key="$TAP_HMAC_KEY" --hmac-peer me.x --seed 20250314 --only core.y',
    );
  });
});

describe('--help', () => {
  it('covers every option the parser takes, the workspace binding, {state} and TAP_HMAC_*', async () => {
    const r = await run('--help');
    expect(r.code).toBe(0);
    const source = readFileSync(fileURLToPath(new URL('../options.ts', import.meta.url)), 'utf8');
    const parsed = source.slice(source.indexOf('options: {'), source.indexOf('},\n    }));'));
    const flags = [...parsed.matchAll(/^\s+'?([a-z][a-z-]*)'?: \{ type:/gm)].map((m) => m[1]!);
    expect(flags.length).toBeGreaterThan(20);
    for (const f of flags) expect(r.out, `--${f}`).toContain(`--${f}`);
    for (const word of [
      '--workspace',
      '{state}',
      'TAP_HMAC_KEY_ID',
      'TAP_HMAC_KEY',
      'TAP_HMAC_PEER',
      '--markdown',
      '--spec-base-url',
      '--repeat',
    ])
      expect(r.out, word).toContain(word);
    // Every option the README shows for tap-conform is in the help.
    const readme = readFileSync(fileURLToPath(new URL('../../README.md', import.meta.url)), 'utf8');
    // Options of the agent's own command (after " -- ") are not tap-conform's.
    const section = readme
      .slice(readme.indexOf('## Certify your own agent'), readme.indexOf('## Build an agent'))
      .split('\n')
      .map((l) => l.split(' -- ')[0]!)
      .join('\n');
    for (const m of section.matchAll(/(?<![\w-])--([a-z][a-z-]+)/g)) expect(r.out, `--${m[1]}`).toContain(`--${m[1]}`);
  });
});

describe('targets', () => {
  it('takes a stdio command and a ws:// URL of one agent in one run, stdio first', () => {
    const p = parseCli(['ws://127.0.0.1:1/tap', '--', 'python3', 'agent.py']);
    expect(p.ok).toBe(true);
    const c = (p as { config: Config }).config;
    expect(c.targets.map((t) => t.kind)).toEqual(['stdio', 'websocket']);
    expect(c.target?.kind).toBe('stdio');
    expect(replayCommand(c, 'core.x', '', c.targets[1])).toBe('tap-conform ws://127.0.0.1:1/tap --seed 20250314 --only core.x');
  });

  it('takes a key that starts with "-" written --hmac-key=KEY, and says how to write it when it is not', () => {
    const key = '-' + 'A'.repeat(43);
    const given = parseCli(['ws://h:1/p', '--hmac-key-id', 'k', `--hmac-key=${key}`, '--hmac-peer', 'me.x']);
    expect(given.ok).toBe(true);
    const apart = parseCli(['ws://h:1/p', '--hmac-key-id', 'k', '--hmac-key', key, '--hmac-peer', 'me.x']);
    expect(apart.ok).toBe(false);
    expect((apart as { error: string }).error).toMatch(/--hmac-key.*ambiguous.*'--hmac-key=-XYZ'/);
  });

  it('refuses two targets of one binding, and --hmac-* without a WebSocket target', () => {
    const two = parseCli(['ws://a:1/x', 'ws://b:1/x']);
    expect(two.ok).toBe(false);
    expect((two as { error: string }).error).toMatch(/^one agent at a time/);
    const hmac = parseCli(['--hmac-key-id', 'k', '--hmac-key', 'AAAA', './agent']);
    expect((hmac as { error: string }).error).toMatch(/for WebSocket agents/);
    expect(parseCli(['--hmac-key-id', 'k', '--hmac-key', 'AAAA', 'ws://a:1/x', '--', './agent']).ok).toBe(true);
  });

  it('parses --markdown and --spec-base-url', () => {
    const c = (parseCli(['--markdown', 'r.md', '--spec-base-url', 'https://tap.example/', './a']) as { config: Config }).config;
    expect(c.markdown).toBe('r.md');
    expect(c.specBaseUrl).toBe('https://tap.example/');
  });
});
