/** npm run demo:mesh: the printed timeline shows the kill, the registry dropping the coder, the move with attempt 2 and one complete trace. */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { natsServerInstalled, NO_NATS_SERVER } from '../../transports/nats/nats-server.testkit.ts';
import { lacks, needing } from '../../../test/system-tools.testkit.ts';

if (!natsServerInstalled) console.warn(NO_NATS_SERVER);

const ROOT = resolve(import.meta.dirname, '../../..');

describe.skipIf(lacks('nats-server'))(needing('nats-server', 'the mesh demo'), () => {
  it('prints the fail-over of a killed coder and one trace across every hop', { timeout: 120_000 }, async ({ onTestFinished }) => {
    // The demo keeps its trace records for `tapctl mesh trace` afterwards; the test's go when it ends.
    const logs = mkdtempSync(join(tmpdir(), 'tap-mesh-demo-test-'));
    onTestFinished(() => rmSync(logs, { recursive: true, force: true }));
    const child = spawn(process.execPath, ['--import', 'tsx', 'reference/agents/mesh-demo/run.ts', '--logs', logs], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const code = await new Promise<number | null>((r) => child.once('exit', r));
    expect(err).toBe('');
    expect(code).toBe(0);
    const killed = /KILL (coder-\d) \(SIGKILL to pid \d+\) while it holds task (task-[0-9a-f]+(?:-[0-9]+)?)/.exec(out);
    expect(killed).not.toBeNull();
    const [, coder, task] = killed!;
    const other = coder === 'coder-1' ? 'coder-2' : 'coder-1';
    const lines = out.split('\n');
    const at = (re: RegExp): number => lines.findIndex((l) => re.test(l));
    const kill = at(/KILL coder/);
    const dropped = at(new RegExp(`registry: ${coder} dropped: its entry went stale`));
    const lost = at(new RegExp(`${coder} is lost holding task ${task}: the copy moves on`));
    const moved = at(new RegExp(`coordinator → ${other}: task.request task-[0-9a-f]+(?:-[0-9]+)?, attempt 2,`));
    expect([kill, dropped, lost, moved].every((i) => i > 0)).toBe(true);
    expect(kill).toBeLessThan(dropped);
    expect(kill).toBeLessThan(lost);
    expect(lost).toBeLessThan(moved);
    expect(out).toMatch(new RegExp(`demo.code completed: ${coder} attempt 1 \\(lost\\) → ${other} attempt 2 \\(completed\\)`));
    // Every node wrote its records, the agents included (through the recording transport).
    expect(out).toMatch(/trace records: \d+ from 6 nodes \(analyst, coder-1, coder-2, coordinator, reviewer, router\)/);
    // One trace: five spans, the reviewer's under the router's, complete.
    expect(out).toMatch(/trace [0-9a-f]{32}: 5 span\(s\), complete/);
    expect(out).toMatch(/\n {2}mesh-demo\.coordinator → mesh-demo\.router .*\n {4}mesh-demo\.router → mesh-demo\.reviewer .*completed/);
  });
});
