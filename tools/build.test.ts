import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { leftOver, newestInput } from './build.ts';

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

describe('an incremental build removes what dist/ holds of a source that is gone (tools/build.ts leftOver)', () => {
  const modules = new Set(['reference/core/ids', 'conformance/cli']);
  const exists = (path: string) => path === 'schemas/v1/ping.payload.schema.json';

  it('keeps the outputs of a compiled module and of a JSON file that is there', () => {
    for (const path of ['reference/core/ids.js', 'reference/core/ids.js.map', 'reference/core/ids.d.ts', 'conformance/cli.js'])
      expect(leftOver(path, modules, exists)).toBe(false);
    expect(leftOver('schemas/v1/ping.payload.schema.json', modules, exists)).toBe(false);
  });

  it('removes the outputs of a module no longer compiled and of a JSON file that is gone', () => {
    for (const path of ['reference/core/gone.js', 'reference/core/gone.js.map', 'reference/core/gone.d.ts', 'reference/core/ids.test.js'])
      expect(leftOver(path, modules, exists)).toBe(true);
    expect(leftOver('schemas/v1/gone.schema.json', modules, exists)).toBe(true);
  });

  it('leaves the bundles, the generated validators and the stamp alone', () => {
    for (const path of [
      'bin/tap-conform/main.js',
      'lib/index.js',
      'lib/chunks/chunk-X.js',
      '.built',
      'reference/core/validators.generated.js',
      'reference/core/validators.generated.d.ts',
    ])
      expect(leftOver(path, modules, exists)).toBe(false);
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
