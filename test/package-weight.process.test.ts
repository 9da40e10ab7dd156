/**
 * What importing the package costs an agent that uses none of it: the main entry loads neither the
 * NATS client (an optional peer, loaded on first NATS use), nor ws and Node's HTTP servers (loaded
 * when a WebSocket or monitoring server starts), nor TypeBox (the schemas' build-time source; the
 * runtime reads the emitted JSON Schemas). Every stdio agent is a process that imports the
 * package, and tap-conform starts one per case.
 */
import { execFile } from 'node:child_process';
import { writeFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'tap-weight-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The URLs of the modules a program loads, as a loader hook sees them. */
async function loadedBy(program: string): Promise<string[]> {
  const hook = join(dir, 'hook.mjs');
  // Node 20 runs loader hooks on a thread of their own, whose process.stderr reaches the process's
  // own only asynchronously, so that lines written shortly before the program exits can be lost (a
  // loaded machine's run once missed node:http): the hook writes to the file descriptor itself.
  writeFileSync(
    hook,
    "import { writeSync } from 'node:fs';\n" +
      'export async function load(url, context, next) { writeSync(2, `LOADED ${url}\\n`); return next(url, context); }\n',
  );
  const main = join(dir, 'main.mjs');
  writeFileSync(main, program);
  // CommonJS modules a program requires bypass the ESM hook: list them from the require cache too.
  const { stderr, stdout } = await promisify(execFile)(
    process.execPath,
    ['--no-warnings', '--experimental-loader', pathToFileURL(hook).href, main],
    {
      cwd: ROOT,
    },
  );
  return [...stderr.matchAll(/^LOADED (.*)$/gm)].map((m) => m[1]!).concat(JSON.parse(stdout) as string[]);
}

/** The file an import of the package's `subpath` loads, through its exports map (dist/lib/, the bundled entries). */
const entryOf = (subpath: string): string => pathToFileURL(createRequire(import.meta.url).resolve(`tap-agent-protocol${subpath}`)).href;

const REQUIRED = "import { createRequire } from 'node:module'; const required = () => Object.keys(createRequire(import.meta.url).cache);";

describe('importing tap-agent-protocol', () => {
  it('loads neither the NATS client, nor ws, nor node:http or node:https, nor TypeBox, nor the OpenTelemetry API', async () => {
    const entry = entryOf('');
    expect(entry).toMatch(/\/dist\/lib\/index\.js$/);
    const loaded = await loadedBy(`${REQUIRED}\nawait import('${entry}');\nconsole.log(JSON.stringify(required()));\n`);
    // The bundled entry and its chunks, none of the per-module compile.
    const ours = loaded.filter((u) => u.includes('/dist/'));
    expect(ours.length).toBeGreaterThan(0);
    expect(ours.filter((u) => !u.includes('/dist/lib/'))).toEqual([]);
    expect(loaded.filter((u) => /node_modules\/(@nats-io|ws|@sinclair\/typebox|@opentelemetry)\//.test(u))).toEqual([]);
    expect(loaded.filter((u) => /^node:https?$/.test(u))).toEqual([]);
  });

  it('loads the NATS client on first use, and ws and node:http when a WebSocket server starts', async () => {
    const index = entryOf('');
    const transports = entryOf('/transports');
    const client = entryOf('/client');
    const loaded = await loadedBy(
      `${REQUIRED}\nawait import('${index}');\nconst { createWebSocketServer } = await import('${transports}');\nconst { connectNats } = await import('${client}');\n` +
        'const server = await createWebSocketServer({ port: 0, onSession: () => {} });\nawait server.close();\n' +
        "await connectNats('nats://127.0.0.1:1/a.b', { agentId: 'a.requester' }).catch(() => {});\nconsole.log(JSON.stringify(required()));\n",
    );
    expect(loaded.some((u) => u.includes('node_modules/ws/'))).toBe(true);
    expect(loaded).toContain('node:http');
    expect(loaded.some((u) => u.includes('node_modules/@nats-io/transport-node/'))).toBe(true);
  });
});
