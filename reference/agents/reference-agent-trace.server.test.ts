/**
 * `tap-reference-agent --mesh URL --trace FILE`, the compiled bin as users run it, against a real
 * nats-server: a task routed to it through the mesh leaves one trace record per traced message in
 * FILE, under the trace and span the requester set (spec: mesh#trace-records, TAP-MESH-019).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectMesh } from '../mesh/connect.ts';
import type { TraceRecord } from '../mesh/trace.ts';
import { NO_NATS_SERVER, natsServerInstalled, startNatsServer, type NatsServer } from '../transports/nats/nats-server.testkit.ts';
import { lacks, needing } from '../../test/system-tools.testkit.ts';

if (!natsServerInstalled) console.warn(NO_NATS_SERVER);

const BIN = fileURLToPath(new URL('../../bin/tap-reference-agent.mjs', import.meta.url));

describe.skipIf(lacks('nats-server'))(needing('nats-server', 'tap-reference-agent --trace (spec: mesh#trace-records)'), () => {
  let server: NatsServer;
  let agent: ChildProcess;
  const dir = mkdtempSync(join(tmpdir(), 'tap-agent-trace-'));
  const file = join(dir, 'agent.jsonl');

  beforeAll(async () => {
    server = await startNatsServer();
    agent = spawn(
      process.execPath,
      [BIN, '--mesh', server.url, '--mesh-heartbeat-ms', '200', '--agent-id', 'tap.traced', '--trace', file, '--grace-ms', '1000'],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    await once(createInterface({ input: agent.stdout! }), 'line');
  }, 30_000);
  afterAll(async () => {
    if (agent && agent.exitCode === null) agent.kill('SIGKILL');
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('writes a record for the task.request it received and the task.result it sent, under the requester’s trace and span', async () => {
    const mesh = await connectMesh(server.url, { agentId: 'trace.requester' });
    const handle = await mesh.task('tap.test.echo', { text: 'traced' });
    try {
      expect((await handle.result).status).toBe('completed');
    } finally {
      await mesh.close();
    }
    expect(handle.agentId).toBe('tap.traced');
    const span = handle.hops[0]!.span;
    // The agent ends on SIGTERM, which flushes its file.
    const exited = once(agent, 'exit');
    agent.kill('SIGTERM');
    expect((await exited)[0]).toBe(0);
    const records = readFileSync(file, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as TraceRecord)
      .filter((r) => r.trace_id === handle.traceId);
    const request = records.find((r) => r.type === 'task.request');
    const result = records.find((r) => r.type === 'task.result');
    expect(request).toMatchObject({ node: 'tap.traced', dir: 'received', span_id: span.span_id, task_id: handle.taskId, attempt: 1 });
    expect(result).toMatchObject({ node: 'tap.traced', dir: 'sent', span_id: span.span_id, task_id: handle.taskId, status: 'completed' });
    expect(result!.duration_ms).toBeGreaterThanOrEqual(0);
    for (const r of records) expect(Number.isNaN(Date.parse(r.time))).toBe(false);
  }, 30_000);

  it('refuses --trace without a NATS binding, with a usage error (exit 2)', () => {
    const run = spawnSync(process.execPath, [BIN, '--trace', join(dir, 'x.jsonl')], { encoding: 'utf8' });
    expect(run.status).toBe(2);
    expect(run.stderr).toMatch(/--trace records the sessions served through NATS/);
  });
});
