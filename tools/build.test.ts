import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { newestInput } from './build.ts';

const dir = mkdtempSync(join(tmpdir(), 'tap-build-test-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Writes a file dated `seconds` after the epoch. */
function file(path: string, seconds: number): void {
  mkdirSync(join(path, '..'), { recursive: true });
  writeFileSync(path, '');
  utimesSync(path, seconds, seconds);
}

describe('the build is current until a compiled input changes (tools/build.ts)', () => {
  it('leaves test files and test folders, which dist/ does not hold, out of the newest input', () => {
    file(join(dir, 'src', 'agent.ts'), 1000);
    file(join(dir, 'src', 'agent.test.ts'), 5000);
    file(join(dir, 'src', 'test', 'helper.ts'), 6000);
    for (const d of [join(dir, 'src', 'test'), join(dir, 'src'), dir]) utimesSync(d, 500, 500);
    expect(newestInput(dir)).toBe(1000 * 1000);
    file(join(dir, 'src', 'agent.ts'), 7000);
    expect(newestInput(dir)).toBe(7000 * 1000);
  });
});

describe('the reference agent runs from its bundle (tools/build.ts BINS)', () => {
  it('loads one module of dist/bin and no compiled module of dist/reference, and answers a handshake', async () => {
    const root = join(import.meta.dirname, '..');
    const log = join(dir, 'loaded.txt');
    const hooks = join(dir, 'hooks.mjs');
    writeFileSync(
      hooks,
      `import { appendFileSync } from 'node:fs';\nexport async function resolve(s, c, next) { const r = await next(s, c); appendFileSync(${JSON.stringify(log)}, r.url + '\\n'); return r; }\n`,
    );
    const register = join(dir, 'register.mjs');
    writeFileSync(register, `import { register } from 'node:module';\nregister(${JSON.stringify(pathToFileURL(hooks).href)});\n`);
    const init = readFileSync(join(root, 'fixtures/messages/handshake.init/target-wildcard.json'), 'utf8');
    const child = spawn(process.execPath, ['--import', register, join(root, 'bin/tap-reference-agent.mjs')], {
      stdio: ['pipe', 'pipe', 'ignore'],
    });
    let out = '';
    const acked = new Promise<void>((resolve) =>
      child.stdout.on('data', (d: Buffer) => {
        out += d;
        if (out.includes('"handshake.ack"')) resolve();
      }),
    );
    child.stdin.write(`${JSON.stringify(JSON.parse(init))}\n`);
    await acked;
    child.kill('SIGKILL');
    const loaded = readFileSync(log, 'utf8')
      .split('\n')
      .filter((u) => u.startsWith('file:'));
    const ours = loaded.map((u) => fileURLToPath(u)).filter((p) => p.startsWith(join(root, 'dist')));
    expect(ours).toContain(join(root, 'dist/bin/tap-reference-agent/main.js'));
    expect(ours.filter((p) => p.startsWith(join(root, 'dist/reference')))).toEqual([]);
  });
});

describe('the reference agent over stdio, end of input right after a message', () => {
  it('writes its handshake.ack before it exits when the input ends in the same read as the init (spec: bindings-stdio#end-of-input)', async () => {
    const root = join(import.meta.dirname, '..');
    const init = JSON.stringify(JSON.parse(readFileSync(join(root, 'fixtures/messages/handshake.init/target-wildcard.json'), 'utf8')));
    const child = spawn(process.execPath, [join(root, 'bin/tap-reference-agent.mjs')], { stdio: ['pipe', 'pipe', 'ignore'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d));
    child.stdin.end(`${init}\n`);
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    expect(code).toBe(0);
    expect(
      out
        .split('\n')
        .filter(Boolean)
        .map((l) => (JSON.parse(l) as { type: string }).type)[0],
    ).toBe('handshake.ack');
  });
});
