/**
 * The main job: certifies the bundled reference agent with tap-conform over stdio and over
 * WebSocket, printing each report. `--json-dir D` also keeps the JSON reports as
 * D/stdio.json and D/websocket.json; other arguments after `--` go to tap-conform.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, openSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { b64u, newKey } from '../conformance/mac.ts';
import { HARNESS_SIGNED_ID } from '../conformance/options.ts';
import { startListening } from './listening-agent.ts';

const root = new URL('..', import.meta.url).pathname;
const conform = join(root, 'bin/tap-conform.mjs');
const agent = join(root, 'bin/tap-reference-agent.mjs');

function run(args: string[], env: NodeJS.ProcessEnv = process.env): Promise<number> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [conform, ...args], { cwd: root, env, stdio: 'inherit' });
    child.on('exit', (code) => resolve(code ?? 1));
  });
}

function stop(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => {
    if (child.exitCode !== null) return resolve(child.exitCode);
    const kill = setTimeout(() => child.kill('SIGKILL'), 15_000);
    child.removeAllListeners('exit');
    child.on('exit', (code) => {
      clearTimeout(kill);
      resolve(code);
    });
    child.kill('SIGTERM');
  });
}

async function main(): Promise<number> {
  const { values, positionals } = parseArgs({
    options: { 'json-dir': { type: 'string' } },
    allowPositionals: true,
  });
  const extra = positionals;
  const json = (name: string) => (values['json-dir'] ? ['--json', join(values['json-dir'], `${name}.json`)] : []);

  console.log('\n=== tap-conform: reference agent over stdio ===\n');
  // A state folder per case ("{state}", made by tap-conform) gives the agent durability "restart",
  // so the crash-and-restart cases run too (spec: tasks#durability).
  const stdio = await run([...json('stdio'), ...extra, '--', process.execPath, agent, '--state-dir', '{state}']);

  // Over WebSocket the agent and the harness share a fresh HMAC key, so the integrity profile runs
  // too (spec: integrity); the replay commands tap-conform prints read it from $TAP_HMAC_KEY.
  const key = { TAP_HMAC_KEY_ID: 'certify', TAP_HMAC_KEY: b64u(newKey()), TAP_HMAC_PEER: HARNESS_SIGNED_ID };
  const env = { ...process.env, ...key };
  console.log('\n=== tap-conform: reference agent over WebSocket (signed with a fresh HMAC key) ===\n');
  // The agent's own log (what it noticed about the harness's deliberate misbehaviour) is kept aside.
  const log = join(mkdtempSync(join(tmpdir(), 'tap-certify-')), 'websocket-agent.log');
  let ws = 3;
  try {
    // A resume window of 10 s (not the default 5 min) lets the case of an orphaned session's end run.
    const { url, child } = await startListening([process.execPath, agent, '--listen', 'ws://127.0.0.1:0', '--resume-window-ms', '10000'], {
      cwd: root,
      env,
      stderr: openSync(log, 'w'),
      timeoutMs: 20_000,
    });
    ws = await run(
      [
        ...json('websocket'),
        ...extra,
        '--hmac-key-id',
        key.TAP_HMAC_KEY_ID,
        '--hmac-key',
        key.TAP_HMAC_KEY,
        '--hmac-peer',
        key.TAP_HMAC_PEER,
        url,
      ],
      env,
    );
    const exit = await stop(child);
    if (exit !== 0) {
      console.error(`certify: the WebSocket reference agent exited with ${exit} on SIGTERM (expected 0)`);
      ws = ws || 1;
    }
  } catch (err) {
    console.error(`certify: ${(err as Error).message}`);
  }
  if (ws !== 0) console.error(`certify: the WebSocket agent's log is in ${log}`);
  else rmSync(dirname(log), { recursive: true, force: true });
  console.log(
    `\nstdio: ${stdio === 0 ? 'certified' : `not certified (exit ${stdio})`}; WebSocket: ${ws === 0 ? 'certified' : `not certified (exit ${ws})`}`,
  );
  return stdio === 0 && ws === 0 ? 0 : 1;
}

process.exit(await main());
