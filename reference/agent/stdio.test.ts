import { PassThrough, Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import type { CloseInfo, InboundFrame, Transport } from '../transports/index.ts';
import { testAgent, TestPeer, expectCleanHistories, type Msg } from './peer.testkit.ts';

afterEach(expectCleanHistories);

/** The requester's side of an in-process stdio pipe pair: lines to the agent's input, lines from its output. */
function requesterEnd(input: PassThrough, output: PassThrough): Transport {
  const t: Transport = {
    async start() {
      let buffered = '';
      output.on('data', (chunk: Buffer) => {
        buffered += chunk.toString('utf8');
        let i;
        while ((i = buffered.indexOf('\n')) >= 0) {
          const line = buffered.slice(0, i);
          buffered = buffered.slice(i + 1);
          const bytes = new TextEncoder().encode(line);
          t.onmessage?.({ bytes, oversized: false, byteLength: bytes.length } satisfies InboundFrame);
        }
      });
      output.on('end', () => t.onclose?.({ code: 1000 } satisfies CloseInfo));
    },
    async send(text) {
      input.write(text + '\n');
    },
    async close() {
      input.end();
    },
  };
  return t;
}

describe('stdio binding', () => {
  it('shuts down at end of input: hand-offs, results and farewell go out, then the session is over (spec: shutdown#end-of-input)', async () => {
    const input = new PassThrough();
    const output = new PassThrough();
    const agent = testAgent();
    const served = agent.serveStdio({ input, output });
    const peer = new TestPeer(requesterEnd(input, output));
    await peer.handshake();
    peer.request('s1', 'tap.test.sleep', { ms: 60_000 });
    await peer.waitFor((m) => m.task_id === 's1' && m.sequence === 2);
    await peer.close();
    await served;
    await peer.until(() => peer.closed);
    expect(peer.stream('s1').map((m) => m.type)).toEqual(['task.accepted', 'task.event', 'task.handoff', 'task.event', 'task.result']);
    expect(peer.stream('s1').at(-1)!.payload).toMatchObject({ status: 'cancelled', error: { code: 'SHUTTING_DOWN', retryable: true } });
    expect(peer.received.at(-1)!.type).toBe('session.farewell');
    expect(peer.violations(true)).toEqual([]);
  });

  /**
   * Serves a stdio session whose drain (60 s) would outlast the test, starts `request`, ends the
   * input once `started` matches a message, and returns the requester and how long the session
   * took to end after that.
   */
  async function endOfInputAfter(request: (peer: TestPeer) => void, started: (m: Msg) => boolean) {
    const input = new PassThrough();
    const output = new PassThrough();
    const agent = testAgent({ drainMs: 60_000, shutdownGraceMs: 120_000 });
    const served = agent.serveStdio({ input, output });
    const peer = new TestPeer(requesterEnd(input, output));
    await peer.handshake();
    request(peer);
    await peer.waitFor(started);
    const closedAt = Date.now();
    await peer.close();
    await served;
    await peer.until(() => peer.closed);
    return { peer, ms: Date.now() - closedAt };
  }

  it('says farewell at once at end of input when no task is unfinished: nothing more can arrive, so there is no drain (spec: shutdown#end-of-input)', async () => {
    const { peer, ms } = await endOfInputAfter(
      (p) => p.request('e1', 'tap.test.echo', { hello: 'stdio' }),
      (m) => m.task_id === 'e1' && m.type === 'task.result',
    );
    expect(peer.received.at(-1)!.type).toBe('session.farewell');
    expect(ms).toBeLessThan(5_000);
  });

  it('gives a task running at end of input the drain to finish in, and ends the drain as it finishes (spec: shutdown#end-of-input)', async () => {
    const { peer, ms } = await endOfInputAfter(
      (p) => p.request('s2', 'tap.test.sleep', { ms: 300 }),
      (m) => m.task_id === 's2' && m.sequence === 2,
    );
    // The task ended on its own within the drain: its ordinary result, no hand-off.
    expect(peer.stream('s2').map((m) => m.type)).toEqual(['task.accepted', 'task.event', 'task.result']);
    expect(peer.stream('s2').at(-1)!.payload).toMatchObject({ status: 'completed' });
    expect(peer.received.at(-1)!.type).toBe('session.farewell');
    expect(ms).toBeLessThan(5_000);
  });

  it('treats a broken output (EPIPE) as a lost transport, not a crash (spec: shutdown#epipe)', async () => {
    const input = new PassThrough();
    const tee = new PassThrough();
    let broken = false;
    const output = new Writable({
      write(chunk, _enc, cb) {
        if (broken) return cb(Object.assign(new Error('write EPIPE'), { code: 'EPIPE' }));
        tee.write(chunk);
        cb();
      },
    });
    const agent = testAgent();
    const served = agent.serveStdio({ input, output });
    const peer = new TestPeer(requesterEnd(input, tee));
    await peer.handshake();
    peer.request('s1', 'tap.test.sleep', { ms: 60_000 });
    await peer.waitFor((m) => m.task_id === 's1' && m.sequence === 2);
    broken = true;
    peer.send({ type: 'ping' });
    await served;
    expect(agent.stats()).toMatchObject({ sessions: 0, activeTasks: 0 });
  });
});
