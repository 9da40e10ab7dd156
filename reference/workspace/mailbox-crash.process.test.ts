/**
 * Mailboxes under crashes (spec: bindings-workspace#mailboxes): writer and reader processes
 * (mailbox-peer.testkit.ts), the reader killed and restarted mid-stream.
 */
import { promises as fsp, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { HERE, runScript, stopChild, waitFor, type ScriptChild, cleanupAfterEach } from './workspace.testkit.ts';

const PEER = join(HERE, 'mailbox-peer.testkit.ts');
const { cleanups, root } = cleanupAfterEach();

function peer(args: string[]): ScriptChild {
  const c = runScript(PEER, args);
  cleanups.push(() => stopChild(c, 1000));
  return c;
}

describe('mailbox writer and reader processes (spec: bindings-workspace#mailboxes)', () => {
  it('loses nothing and applies nothing twice, in order per sender, with concurrent writers and a reader killed and restarted mid-stream', async () => {
    const dir = await root();
    const effects = join(dir, 'effects.jsonl');
    const senders = ['w1', 'w2', 'w3'];
    const count = 120;
    const writers = senders.map((from) =>
      peer(['write', '--root', dir, '--from', from, '--to', 'sink', '--count', String(count), '--delay-ms', '3']),
    );
    const lines = () => {
      try {
        return readFileSync(effects, 'utf8')
          .split('\n')
          .filter((l) => l.trim() !== '').length;
      } catch {
        return 0;
      }
    };
    // Each effect takes 2 ms at least: the 90 effects between two kills take 180 ms or more, so a
    // kill lands mid-stream even when the writers are done and the poll below comes late.
    const readerArgs = ['read', '--root', dir, '--to', 'sink', '--from', senders.join(','), '--effects', effects, '--apply-delay-ms', '2'];
    const kills: number[] = [];
    for (const threshold of [40, 130, 220]) {
      const reader = peer(readerArgs);
      await reader.line((l) => l.event === 'ready');
      await waitFor(() => lines() >= threshold, 30_000, `${threshold} effects`);
      reader.child.kill('SIGKILL');
      await reader.exited;
      kills.push(lines());
    }
    const last = peer(readerArgs);
    await Promise.all(writers.map((w) => w.line((l) => l.event === 'done', 30_000)));
    await waitFor(() => lines() >= senders.length * count, 30_000, 'every effect');
    await stopChild(last);

    const applied = readFileSync(effects, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { from: string; n: number; redelivered: boolean });
    expect(applied).toHaveLength(senders.length * count);
    for (const from of senders) {
      expect(
        applied.filter((a) => a.from === from).map((a) => a.n),
        from,
      ).toEqual(Array.from({ length: count }, (_, i) => i + 1));
    }
    expect(kills.every((k) => k < senders.length * count)).toBe(true);
    for (const from of senders) {
      const box = join(dir, 'mailboxes', 'sink', from);
      expect((await fsp.readdir(box)).filter((n) => n.endsWith('.tap.json'))).toEqual([]);
      expect(await fsp.readdir(join(box, '.inflight'))).toEqual([]);
    }
  }, 60_000);
});
