import { describe, expect, it } from 'vitest';
import { createMemoryPair } from '../../reference/transports/memory.ts';
import type { MemoryTransport } from '../../reference/transports/memory.ts';
import { Findings, Peer } from '../peer.ts';
import { IdSource, SessionState } from '../session-state.ts';
import { Transcript } from '../transcript.ts';

/** A scripted agent end: answers pings unless told otherwise. */
function pair(agent: { pong: boolean }, findings = new Findings(), conn = 1) {
  const [harness, far] = createMemoryPair();
  const peer = new Peer({
    transport: harness,
    binding: 'websocket',
    state: new SessionState('tap-conform', 'agent-x'),
    transcript: new Transcript(),
    findings,
    ids: new IdSource('test'),
    conn,
    stepTimeoutMs: 150,
    timeScale: 1,
  });
  far.onmessage = (f) => {
    const m = JSON.parse(new TextDecoder().decode(f.bytes));
    if (m.type === 'ping' && agent.pong) {
      void far.send(
        JSON.stringify({
          protocol: 'tap/1.0',
          message_id: `p-${m.message_id}`,
          type: 'pong',
          source: 'agent-x',
          target: 'tap-conform',
          timestamp: new Date().toISOString(),
          reply_to: m.message_id,
          payload: {},
        }),
      );
    }
  };
  return { peer, far: far as MemoryTransport, findings };
}

describe('missing replies are classified (spec: conformance#verdicts)', () => {
  it('as ignoring when the agent still answers a ping', async () => {
    const { peer, far } = pair({ pong: true });
    await far.start();
    await peer.start();
    const sent = await peer.post('task.status', {}, { task_id: 't-1' });
    const r = await peer.reply(sent, 100);
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(r.outcome.silence).toBe('ignoring');
      expect(r.outcome.verdict).toBe('FAIL');
    }
  });

  it('as hung when not even a ping is answered', async () => {
    const { peer, far } = pair({ pong: false });
    await far.start();
    await peer.start();
    const sent = await peer.post('task.status', {}, { task_id: 't-1' });
    const r = await peer.reply(sent, 100);
    expect(!r.ok && r.outcome.silence).toBe('hung');
  });

  it('as crashed when the connection closed', async () => {
    const { peer, far } = pair({ pong: true });
    await far.start();
    await peer.start();
    const sent = await peer.post('task.status', {}, { task_id: 't-1' });
    await far.close({ code: 1011, reason: 'boom' });
    const r = await peer.reply(sent, 100);
    expect(!r.ok && r.outcome.silence).toBe('crashed');
    expect(!r.ok && r.outcome.detail).toMatch(/closed the connection \(code 1011/);
  });

  it("answers the agent's pings and records the transcript", async () => {
    const { peer, far } = pair({ pong: true });
    const seen: string[] = [];
    far.onmessage = (f) => seen.push(new TextDecoder().decode(f.bytes));
    await far.start();
    await peer.start();
    await far.send(
      JSON.stringify({
        protocol: 'tap/1.0',
        message_id: 'a-1',
        type: 'ping',
        source: 'agent-x',
        target: 'tap-conform',
        timestamp: new Date().toISOString(),
        payload: {},
      }),
    );
    await new Promise((r) => setTimeout(r, 20));
    expect(seen.some((t) => JSON.parse(t).type === 'pong' && JSON.parse(t).reply_to === 'a-1')).toBe(true);
  });

  it('blames the harness for an invalid message it sends by mistake', async () => {
    const { peer, far, findings } = pair({ pong: true });
    await far.start();
    await peer.start();
    await peer.post('task.status', {}, {});
    expect(findings.violations[0]?.by).toBe('harness');
  });
});

describe('what a connection received', () => {
  it('since() spans every connection of the case; sinceHere() only its own', async () => {
    const findings = new Findings();
    const a = pair({ pong: true }, findings, 1);
    const b = pair({ pong: true }, findings, 2);
    for (const x of [a, b]) {
      await x.far.start();
      await x.peer.start();
    }
    const mark = b.peer.mark();
    await a.peer.ping();
    await b.peer.ping();
    expect(b.peer.since(mark).map((r) => r.conn)).toEqual([1, 2]);
    expect(b.peer.sinceHere(mark).map((r) => r.conn)).toEqual([2]);
  });
});
