import { describe, expect, it } from 'vitest';
import { createAgent, withConformanceCapabilities } from '../../reference/agent/index.ts';
import { freePort } from '../../reference/transports/free-port.testkit.ts';
import { whenListening } from '../wait-listening.ts';

const card = {
  agent_id: 'test.late',
  name: 'Late',
  description: 'Starts listening late.',
  capabilities: [],
  limits: { max_concurrent_tasks: 8, max_task_seconds: 60, max_message_bytes: 1_048_576 },
};

describe('a run waits for a WebSocket agent started just before it', () => {
  it('waits, saying so once, until the agent listens', async () => {
    const port = await freePort();
    const url = `ws://127.0.0.1:${port}/tap`;
    const agent = createAgent({ card, capabilities: withConformanceCapabilities(), logger: () => {}, env: false, signals: false });
    const said: string[] = [];
    const started = setTimeout(() => void agent.listen({ host: '127.0.0.1', port, path: '/tap' }), 700);
    try {
      await whenListening({ kind: 'websocket', url, display: url }, 20_000, (line) => said.push(line));
      expect(said).toEqual([`tap-conform: waiting up to 20 s for ${url} to accept connections`]);
    } finally {
      clearTimeout(started);
      await agent.shutdown();
    }
  });

  it('gives up with the connection error once the wait is over', async () => {
    const port = await freePort();
    const url = `ws://127.0.0.1:${port}/tap`;
    await expect(whenListening({ kind: 'websocket', url, display: url }, 200)).rejects.toThrow(/connection refused/);
  });
});
