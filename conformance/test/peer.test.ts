import { describe, expect, it } from 'vitest';
import { createMemoryPair } from '../../reference/transports/memory.ts';
import type { MemoryTransport } from '../../reference/transports/memory.ts';
import { Findings, none, Peer } from '../peer.ts';
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

describe('an agent that writes a banner instead of answering (spec: conformance#verdicts, TAP-CONF-004)', () => {
  /** The far end writes one non-protocol line, then echoes nothing and never answers. */
  async function banner(agentId?: string) {
    const [harness, far] = createMemoryPair();
    const seen: string[] = [];
    far.onmessage = (f) => seen.push(JSON.parse(new TextDecoder().decode(f.bytes)).type);
    const peer = new Peer({
      transport: harness,
      binding: 'stdio',
      state: new SessionState('tap-conform', agentId),
      transcript: new Transcript(),
      findings: new Findings(),
      ids: new IdSource('test'),
      conn: 1,
      stepTimeoutMs: 150,
      // Far longer than the test may take: the first line the agent writes ends this allowance.
      startupMs: 600_000,
      timeScale: 1,
    });
    await far.start();
    await peer.start();
    const init = await peer.post('handshake.init', {});
    await far.sendRaw(new TextEncoder().encode('Starting my agent v1...\u0007'));
    return { peer, init, seen };
  }

  it('fails the wait within the step timeout, quoting the line, without a ping and without claiming a close', async () => {
    const { peer, init, seen } = await banner();
    const r = await peer.reply(init);
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.outcome.verdict).toBe('FAIL');
    expect(r.outcome.detail).toMatch(
      /^no reply to handshake\.init \S+ within 150 ms; instead the agent wrote a line that is not a TAP message/,
    );
    expect(r.outcome.detail).toContain('"Starting my agent v1...\\u0007"');
    expect(r.outcome.detail).toContain('TAP-CONF-004');
    expect(r.outcome.detail).not.toMatch(/closed/);
    expect(seen).toEqual(['handshake.init']);
    expect(peer.closed).toBeUndefined();
  }, 10_000);

  it('does the same when the agent id is known, since only non-protocol lines came', async () => {
    const { peer, init, seen } = await banner('agent-x');
    const r = await peer.reply(init);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.outcome.detail).toContain('"Starting my agent v1...\\u0007"');
    expect(seen).toEqual(['handshake.init']);
  }, 10_000);
});

describe('"no <what>" reads as English', () => {
  it('drops the article of what was awaited', () => {
    expect(none('an error for truncated JSON')).toBe('no error for truncated JSON');
    expect(none('a reply to ping x')).toBe('no reply to ping x');
    expect(none('session.farewell')).toBe('no session.farewell');
  });
});

describe("an agent's exit is judged with the end of its output", () => {
  const farewell = JSON.stringify({
    protocol: 'tap/1.0',
    message_id: 'bye-1',
    type: 'session.farewell',
    source: 'agent-x',
    target: 'tap-conform',
    timestamp: new Date().toISOString(),
    payload: { reason: 'end of input' },
  });

  function exiting() {
    const [harness, far] = createMemoryPair();
    let exit!: (e: { code: number; signal: null }) => void;
    const peer = new Peer({
      transport: harness,
      binding: 'stdio',
      state: new SessionState('tap-conform', 'agent-x'),
      transcript: new Transcript(),
      findings: new Findings(),
      ids: new IdSource('test'),
      conn: 1,
      stepTimeoutMs: 150,
      timeScale: 1,
      exited: new Promise((resolve) => (exit = resolve)),
    });
    return { peer, far, exit };
  }

  it('reads what the agent wrote before it exited, though the exit was reported first', async () => {
    const { peer, far, exit } = exiting();
    await far.start();
    await peer.start();
    // As a child process: "exit" first, then the rest of its stdout, then the end of the pipe.
    exit({ code: 0, signal: null });
    setTimeout(() => void far.send(farewell).then(() => far.close({ code: 1000, reason: 'exited with code 0' })), 100);
    const got = await peer.waitExit(5000);
    expect(got?.code).toBe(0);
    expect(peer.received.map((r) => r.msg.type)).toEqual(['session.farewell']);
  });

  it('does not wait past its bound for output that never ends', async () => {
    const { peer, far, exit } = exiting();
    await far.start();
    await peer.start();
    exit({ code: 0, signal: null });
    const t0 = Date.now();
    expect((await peer.waitExit(300))?.code).toBe(0);
    expect(Date.now() - t0).toBeLessThan(2000);
  });
});
