/**
 * `npm run certify:bridges`: certifies `tap-bridge mcp` in front of real MCP servers installed
 * from npm and run by their own bins (spec: bridge-mcp-server#conformance): the whole suite over
 * WebSocket (one bridge, one server, a fresh HMAC key shared with the harness) and over stdio (a
 * bridge and a server per case, each with a state folder), for mcp-server-everything and
 * mcp-server-memory (its file in a folder of its own). Reports go to reports/bridges/; after each
 * run no process of the server is left. `--binding websocket|stdio` runs one binding only;
 * `--server everything|memory` one server; arguments after `--` go to tap-conform.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { b64u, newKey } from '../conformance/mac.ts';
import { HARNESS_SIGNED_ID } from '../conformance/options.ts';
import { runConform, stop } from './certify-reference.ts';
import { startListening } from './listening-agent.ts';

const root = new URL('..', import.meta.url).pathname;
const BIN = join(root, 'node_modules/.bin');

/** The MCP servers certified behind the bridge: their bin, and the environment each needs. */
const SERVERS: Record<string, { bin: string; env: (dir: string) => NodeJS.ProcessEnv }> = {
  everything: { bin: 'mcp-server-everything', env: () => ({}) },
  memory: { bin: 'mcp-server-memory', env: (dir) => ({ MEMORY_FILE_PATH: join(dir, 'memory.jsonl') }) },
};

/** The processes whose command line names `bin` (a server the bridge left behind, if any). */
function survivors(bin: string): number[] {
  const ps = spawnSync('ps', ['-eo', 'pid=,args='], { encoding: 'utf8' });
  return ps.stdout
    .split('\n')
    .filter((line) => line.includes(bin) && !line.includes('tap-conform'))
    .map((line) => Number(line.trim().split(/\s+/)[0]));
}

/** The level line of a JSON report, or why there is none. */
function levelOf(file: string): string {
  try {
    return (JSON.parse(readFileSync(file, 'utf8')) as { level: string }).level;
  } catch (err) {
    return `no report (${(err as Error).message})`;
  }
}

async function main(): Promise<number> {
  const { values, positionals } = parseArgs({
    options: { binding: { type: 'string', multiple: true }, server: { type: 'string', multiple: true }, reports: { type: 'string' } },
    allowPositionals: true,
  });
  const bindings = values.binding ?? ['websocket', 'stdio'];
  const servers = values.server ?? Object.keys(SERVERS);
  for (const s of servers) if (!SERVERS[s]) throw new Error(`no server ${s}: the servers are ${Object.keys(SERVERS).join(', ')}`);
  const reports = resolve(values.reports ?? join(root, 'reports/bridges'));
  mkdirSync(reports, { recursive: true });
  const conform = join(root, 'bin/tap-conform.mjs');
  const bridge = [process.execPath, join(root, 'bin/tap-bridge.mjs'), 'mcp'];
  const results: string[] = [];
  let failed = 0;
  for (const name of servers) {
    const server = SERVERS[name]!;
    const serverBin = join(BIN, server.bin);
    for (const binding of bindings) {
      const dir = mkdtempSync(join(tmpdir(), `tap-bridge-${name}-`));
      const env = { ...process.env, ...server.env(dir) };
      const json = join(reports, `${name}-${binding}.json`);
      const out = ['--json', json, '--html', join(reports, `${name}-${binding}.html`), ...positionals];
      const label = `tap-bridge mcp in front of ${server.bin} over ${binding}`;
      console.log(`\n=== tap-conform: ${label} ===\n`);
      let code: number;
      if (binding === 'stdio') {
        code = await runConform(conform, [...out, '--', ...bridge, '--state-dir', '{state}', '--', serverBin], env, label);
      } else {
        const key = { TAP_HMAC_KEY_ID: 'bridges', TAP_HMAC_KEY: b64u(newKey()), TAP_HMAC_PEER: HARNESS_SIGNED_ID };
        const hmac = ['--hmac-key-id', key.TAP_HMAC_KEY_ID, `--hmac-key=${key.TAP_HMAC_KEY}`, '--hmac-peer', key.TAP_HMAC_PEER];
        // As the README starts an agent for tap-conform over WebSocket: in conformance mode, with the run's key.
        const listening = await startListening([...bridge, '--listen', 'ws://127.0.0.1:0', '--', serverBin], {
          cwd: root,
          env: { ...env, ...key, TAP_CONFORMANCE: '1' },
          stderr: 'ignore',
          timeoutMs: 30_000,
        });
        code = await runConform(conform, [...out, ...hmac, listening.url], { ...env, ...key }, label);
        const exit = await stop(listening.child);
        if (exit !== 0) {
          console.error(`certify:bridges: the bridge exited with ${exit} on SIGTERM (expected 0)`);
          code ||= 1;
        }
      }
      const left = survivors(server.bin);
      if (left.length) {
        console.error(`certify:bridges: ${label} left ${left.length} process(es) of ${server.bin}: ${left.join(', ')}`);
        code ||= 1;
      }
      rmSync(dir, { recursive: true, force: true });
      results.push(`${code === 0 ? 'ok  ' : 'FAIL'} ${label}: ${levelOf(json)}`);
      if (code !== 0) failed++;
    }
  }
  console.log(`\n${results.join('\n')}\nreports: ${relative(process.cwd(), reports) || '.'}/`);
  return failed === 0 ? 0 : 1;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) process.exit(await main());
