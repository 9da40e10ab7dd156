/**
 * core.limits.anonymous-origin-tasks against real WebSocket endpoints (spec: limits#sources): the
 * reference agent passes, and the same agent behind a server whose connections carry no origin,
 * so that each anonymous session counts as a principal of its own, fails.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createAgent, withConformanceCapabilities, type Agent } from '../../reference/agent/index.ts';
import { createWebSocketServer } from '../../reference/transports/index.ts';
import { runConformance } from '../run.ts';

const ONLY = ['core.limits.anonymous-origin-tasks'];
const stops: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const stop of stops.splice(0).reverse()) await stop();
});

function agent(): Agent {
  const a = createAgent({
    card: {
      agent_id: 'test.sources',
      name: 'sources',
      description: 'The reference runtime, with a per-principal cap below its agent cap.',
      capabilities: [],
      limits: { max_concurrent_tasks: 12, max_task_seconds: 120, max_message_bytes: 1048576, max_tasks_per_principal: 5 },
    },
    capabilities: withConformanceCapabilities(),
    logger: () => {},
    env: false,
    signals: false,
  });
  stops.push(() => a.shutdown());
  return a;
}

describe('the anonymous sessions of one origin against max_tasks_per_principal (spec: limits#sources)', () => {
  it('passes the reference agent over WebSocket: the harness from 127.0.0.1 is one origin', { timeout: 60_000 }, async () => {
    const listener = await agent().listen({ port: 0 });
    const report = await runConformance({ target: listener.url, only: ONLY, timeoutMs: 5000 });
    expect(report.cases.map((c) => [c.id, c.verdict, c.detail])).toEqual([[ONLY[0], 'PASS', expect.any(String)]]);
  });

  it('fails an agent whose connections carry no origin, so that each anonymous session is a principal of its own', {
    timeout: 60_000,
  }, async () => {
    const broken = agent();
    const server = await createWebSocketServer({
      onSession: (transport) => {
        Object.defineProperty(transport, 'origin', { value: undefined });
        broken.attach(transport);
      },
    });
    stops.push(() => server.close());
    const report = await runConformance({ target: server.url, only: ONLY, timeoutMs: 5000 });
    expect(report.cases.map((c) => [c.id, c.verdict])).toEqual([[ONLY[0], 'FAIL']]);
    expect(report.cases[0]!.detail).toContain('though its max_tasks_per_principal is 5');
  });
});
