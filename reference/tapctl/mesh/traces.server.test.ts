/** tapctl mesh tasks and trace: read the trace records a Mesh wrote, show each task and rebuild each trace (spec: mesh#trace-records). */
import { createWriteStream, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TaskContext } from '../../agent/index.ts';
import { Mesh } from '../../mesh/mesh.ts';
import { MemoryRegistry, startMeshAgent, testCapability, type MeshTestAgent } from '../../mesh/mesh.testkit.ts';
import { jsonLines } from '../../mesh/trace.ts';
import { natsServerInstalled, NO_NATS_SERVER, startNatsServer, type NatsServer } from '../../transports/nats/nats-server.testkit.ts';
import { lacks, needing } from '../../../test/system-tools.testkit.ts';
import { tapctl } from '../tapctl.testkit.ts';

if (!natsServerInstalled) console.warn(NO_NATS_SERVER);

describe.skipIf(lacks('nats-server'))(needing('nats-server', 'tapctl mesh tasks and trace'), () => {
  let server: NatsServer;
  const agents: MeshTestAgent[] = [];
  const dir = mkdtempSync(join(tmpdir(), 'tapctl-mesh-'));
  let traceId = '';

  beforeAll(async () => {
    server = await startNatsServer();
    const registry = new MemoryRegistry();
    const coordinatorLog = createWriteStream(join(dir, 'coordinator.jsonl'));
    const routerLog = createWriteStream(join(dir, 'router.jsonl'));
    const onward = new Mesh({ registry, agentId: 'router', traceSink: jsonLines(routerLog) });
    const route = {
      capability: testCapability('test.route', 'Forwards to tap.test.echo.'),
      handler: async (input: unknown, ctx: TaskContext) => {
        const t = await onward.task('tap.test.echo', input, ctx.trace ? { trace: ctx.trace } : {});
        return (await t.result).output;
      },
    };
    agents.push(await startMeshAgent(server.url, 'cli.router', { 'test.route': route }));
    agents.push(await startMeshAgent(server.url, 'cli.echo'));
    for (const a of agents) registry.put(a.entry);
    const mesh = new Mesh({ registry, agentId: 'coordinator', traceSink: jsonLines(coordinatorLog) });
    const t = await mesh.task('test.route', { n: 1 });
    await t.result;
    traceId = t.traceId;
    await mesh.close();
    await onward.close();
    await Promise.all([coordinatorLog, routerLog].map((s) => new Promise((r) => s.end(r))));
  });
  afterAll(async () => {
    for (const a of agents) await a.agent.shutdown('test over').catch(() => undefined);
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('trace rebuilds the two hops, the router under the coordinator, complete (exit 0)', async () => {
    const r = await tapctl('mesh', 'trace', traceId.slice(0, 10), '--logs', dir, '--json');
    expect(r.code).toBe(0);
    const view = JSON.parse(r.out);
    expect(view.problems).toEqual([]);
    expect(view.spans.map((s: { node: string; peer: string }) => `${s.node}>${s.peer}`)).toEqual([
      'coordinator>cli.router',
      'router>cli.echo',
    ]);
    expect(view.spans[1].parent_span_id).toBe(view.spans[0].span_id);
    const text = await tapctl('mesh', 'trace', traceId, '--logs', dir);
    expect(text.out).toMatch(/complete/);
    expect(text.out).toMatch(/\n {2}coordinator → cli\.router .*\n {4}router → cli\.echo /);
  });

  it('tasks lists every attempt with its agent and ending', async () => {
    const r = await tapctl('mesh', 'tasks', '--logs', dir, '--json');
    expect(r.code).toBe(0);
    const rows = JSON.parse(r.out);
    expect(rows.map((x: { peer: string; end: { status: string } }) => [x.peer, x.end.status])).toEqual([
      ['cli.router', 'completed'],
      ['cli.echo', 'completed'],
    ]);
    const only = await tapctl('mesh', 'tasks', '--logs', dir, '--agent', 'cli.echo');
    expect(only.out).toMatch(/cli\.echo/);
    expect(only.out).not.toMatch(/cli\.router/);
  });

  it('a trace whose ending was never recorded is incomplete: the problem names the span, exit 1', async () => {
    const cut = join(dir, 'cut');
    const lines = readFileSync(join(dir, 'router.jsonl'), 'utf8')
      .split('\n')
      .filter((l) => l && !l.includes('"task.result"'));
    rmSync(cut, { recursive: true, force: true });
    mkdirSync(cut);
    writeFileSync(join(cut, 'router.jsonl'), `${lines.join('\n')}\n`);
    writeFileSync(join(cut, 'coordinator.jsonl'), readFileSync(join(dir, 'coordinator.jsonl')));
    const r = await tapctl('mesh', 'trace', traceId, '--logs', cut);
    expect(r.code).toBe(1);
    expect(r.out).toMatch(/INCOMPLETE/);
    expect(r.out).toMatch(/router → cli\.echo, task task-[0-9a-f]+(?:-[0-9]+)?\) has no ending/);
  });

  it('says what to give when there are no records', async () => {
    const r = await tapctl('mesh', 'trace', 'abc', '--logs', join(dir, 'nowhere'));
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/there is no file or directory/);
  });
});
