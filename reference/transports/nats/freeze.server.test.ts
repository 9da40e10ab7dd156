/**
 * A freeze of the machine is no silence of the peer's (spec: bindings-nats#liveness). A host that
 * gives a virtual machine no CPU for seconds stops every process of it alike; when they run again,
 * a side whose check of the peer's silence comes first must not count the frozen seconds against
 * the peer. Simulated here by stopping the listening side and nats-server together with SIGSTOP.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { describe, expect, it } from 'vitest';
import { lacks, needing } from '../../../test/system-tools.testkit.ts';
import type { CloseInfo } from '../transport.ts';
import { connectNatsTransport } from './connect.ts';
import { startNatsServer } from './nats-server.testkit.ts';

const LISTENER = resolve(import.meta.dirname, '../../../dist/reference/transports/nats/listener.js');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A listening side in a process of its own, keeping alive every 10 s (so that its peer here never counts it lost in the test): it prints "ready", then each close of a connection. */
const SCRIPT = `
import { createNatsListener } from ${JSON.stringify(LISTENER)};
await createNatsListener({
  url: process.argv[2],
  agentId: 'tap.frozen',
  keepaliveMs: 10000,
  onSession: (t) => {
    t.onclose = (info) => console.log('closed ' + JSON.stringify({ code: info.code, reason: info.reason }));
    void t.start();
  },
});
console.log('ready');
`;

describe.skipIf(lacks('nats-server'))(needing('nats-server', 'a NATS connection across a freeze of the machine'), () => {
  it('a side that was frozen 4 s, with the server, does not count its peer lost when it runs again: the peer sent keepalives as soon as it could', {
    timeout: 30_000,
  }, async ({ onTestFinished }) => {
    const server = await startNatsServer();
    onTestFinished(() => server.stop());
    const dir = mkdtempSync(join(tmpdir(), 'tap-freeze-'));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    writeFileSync(join(dir, 'listener.mjs'), SCRIPT);
    const child = spawn(process.execPath, [join(dir, 'listener.mjs'), server.url], { stdio: ['ignore', 'pipe', 'inherit'] });
    onTestFinished(() => {
      if (child.exitCode === null) child.kill('SIGKILL');
    });
    const lines: string[] = [];
    const out = createInterface({ input: child.stdout! });
    out.on('line', (l) => lines.push(l));
    if (!lines.includes('ready')) await once(out, 'line');
    // This side keeps alive every second: the listening side counts it lost after 3 s of silence.
    const t = await connectNatsTransport(server.url, { agentId: 'tap.frozen', keepaliveMs: 1000 });
    let closed: CloseInfo | undefined;
    t.onclose = (info) => (closed = info);
    await t.start();
    await sleep(1500);
    for (const pid of [server.pid!, child.pid!]) process.kill(pid, 'SIGSTOP');
    await sleep(4000);
    for (const pid of [server.pid!, child.pid!]) process.kill(pid, 'SIGCONT');
    await sleep(2500);
    expect(lines.filter((l) => l.startsWith('closed'))).toEqual([]);
    expect(closed).toBeUndefined();
    await t.close();
  });
});
