/**
 * The main job: certifies the bundled reference agent with tap-conform over stdio and over
 * WebSocket, printing each report. `--json-dir D` also keeps the JSON reports as
 * D/stdio.json and D/websocket.json; other arguments after `--` go to tap-conform.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';

const root = new URL('..', import.meta.url).pathname;
const conform = join(root, 'bin/tap-conform.mjs');
const agent = join(root, 'bin/tap-reference-agent.mjs');

function run(args: string[]): Promise<number> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [conform, ...args], { cwd: root, stdio: 'inherit' });
    child.on('exit', (code) => resolve(code ?? 1));
  });
}

/** Starts the reference agent on WebSocket and resolves with the URL it prints once ready. */
function startWsAgent(): Promise<{ url: string; child: ChildProcess }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [agent, '--listen', 'ws://127.0.0.1:0'], { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] });
    const timer = setTimeout(() => reject(new Error('the reference agent printed no ws:// URL within 20 s')), 20_000);
    child.on('exit', (code) => reject(new Error(`the reference agent exited (${code}) before listening`)));
    createInterface({ input: child.stdout! }).on('line', (line) => {
      const url = line.match(/ws:\/\/\S+/)?.[0];
      if (url) {
        clearTimeout(timer);
        resolve({ url, child });
      }
    });
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
  const stdio = await run([...json('stdio'), ...extra, '--', process.execPath, agent]);

  console.log('\n=== tap-conform: reference agent over WebSocket ===\n');
  let ws = 3;
  try {
    const { url, child } = await startWsAgent();
    ws = await run([...json('websocket'), ...extra, url]);
    const exit = await stop(child);
    if (exit !== 0) {
      console.error(`certify: the WebSocket reference agent exited with ${exit} on SIGTERM (expected 0)`);
      ws = ws || 1;
    }
  } catch (err) {
    console.error(`certify: ${(err as Error).message}`);
  }
  console.log(`\nstdio: ${stdio === 0 ? 'certified' : `not certified (exit ${stdio})`}; WebSocket: ${ws === 0 ? 'certified' : `not certified (exit ${ws})`}`);
  return stdio === 0 && ws === 0 ? 0 : 1;
}

process.exit(await main());
