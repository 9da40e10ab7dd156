/**
 * What importing the package costs an agent that uses none of it: the main entry loads neither the
 * NATS client (an optional peer, loaded on first NATS use), nor ws (loaded when a WebSocket opens),
 * nor TypeBox (the schemas' build-time source; the runtime reads the emitted JSON Schemas). Every
 * stdio agent is a process that imports the package, and tap-conform starts one per case.
 */
import { execFile } from 'node:child_process';
import { writeFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'tap-weight-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The URLs of the modules a program loads, as a loader hook sees them. */
async function loadedBy(program: string): Promise<string[]> {
  const hook = join(dir, 'hook.mjs');
  writeFileSync(
    hook,
    'export async function load(url, context, next) { process.stderr.write(`LOADED ${url}\\n`); return next(url, context); }\n',
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

const REQUIRED = "import { createRequire } from 'node:module'; const required = () => Object.keys(createRequire(import.meta.url).cache);";

describe('importing tap-agent-protocol', () => {
  it('loads neither the NATS client, nor ws, nor TypeBox, nor the OpenTelemetry API', async () => {
    const entry = pathToFileURL(join(ROOT, 'dist/reference/index.js')).href;
    const loaded = await loadedBy(`${REQUIRED}\nawait import('${entry}');\nconsole.log(JSON.stringify(required()));\n`);
    expect(loaded.some((u) => u.includes('/dist/reference/agent/'))).toBe(true);
    expect(loaded.filter((u) => /node_modules\/(@nats-io|ws|@sinclair\/typebox|@opentelemetry)\//.test(u))).toEqual([]);
  });

  it('loads the NATS client on first use, and ws when a WebSocket server starts', async () => {
    const index = pathToFileURL(join(ROOT, 'dist/reference/index.js')).href;
    const transports = pathToFileURL(join(ROOT, 'dist/reference/transports/index.js')).href;
    const client = pathToFileURL(join(ROOT, 'dist/reference/client/index.js')).href;
    const loaded = await loadedBy(
      `${REQUIRED}\nawait import('${index}');\nconst { createWebSocketServer } = await import('${transports}');\nconst { connectNats } = await import('${client}');\n` +
        'const server = await createWebSocketServer({ port: 0, onSession: () => {} });\nawait server.close();\n' +
        "await connectNats('nats://127.0.0.1:1/a.b', { agentId: 'a.requester' }).catch(() => {});\nconsole.log(JSON.stringify(required()));\n",
    );
    expect(loaded.some((u) => u.includes('node_modules/ws/'))).toBe(true);
    expect(loaded.some((u) => u.includes('node_modules/@nats-io/transport-node/'))).toBe(true);
  });
});
