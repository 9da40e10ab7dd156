/**
 * A mailbox peer process for the binding's tests.
 *   write --root R --from ID --to ID --count N [--delay-ms D]
 *       sends N messages (payload { n }), one file each, then prints {"event":"done"}.
 *   read --root R --to ID --from A,B,C --effects FILE [--apply-delay-ms D]
 *       reads the mailboxes of the senders; each delivery appends one line to FILE (after D ms,
 *       so that a test can kill the reader while a backlog is still being applied). The line
 *       carries the delivery's dedup key, and the same file is the reader's DedupStore, so the
 *       effect and its dedup record are one atomic append: each message takes effect exactly once.
 */
import { closeSync, fdatasyncSync, openSync, readFileSync, writeSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { MailboxReader, type DedupStore } from './mailbox-reader.ts';
import { MailboxWriter } from './mailbox-writer.ts';

const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: {
    root: { type: 'string' },
    from: { type: 'string' },
    to: { type: 'string' },
    count: { type: 'string', default: '10' },
    'delay-ms': { type: 'string', default: '0' },
    'apply-delay-ms': { type: 'string', default: '0' },
    effects: { type: 'string' },
  },
});
const out = (line: Record<string, unknown>) => process.stdout.write(JSON.stringify(line) + '\n');

/** The effects file, used as the dedup store: a key is "seen" once its effect line exists. */
class EffectLog implements DedupStore {
  private readonly keys = new Set<string>();
  private readonly fd: number;
  constructor(path: string) {
    let text = '';
    try {
      text = readFileSync(path, 'utf8');
    } catch {
      // a new log
    }
    for (const line of text.split('\n')) {
      if (line.trim() === '') continue;
      try {
        this.keys.add((JSON.parse(line) as { key: string }).key);
      } catch {
        // a torn last line is no effect
      }
    }
    this.fd = openSync(path, 'a');
  }
  has(key: string): boolean {
    return this.keys.has(key);
  }
  async add(): Promise<void> {
    // recorded by `apply` together with the effect
  }
  apply(key: string, effect: Record<string, unknown>): void {
    writeSync(this.fd, JSON.stringify({ key, ...effect }) + '\n');
    fdatasyncSync(this.fd);
    this.keys.add(key);
  }
  close(): void {
    closeSync(this.fd);
  }
}

if (positionals[0] === 'write') {
  const writer = new MailboxWriter(values.root!, values.to!, values.from!);
  const delay = Number(values['delay-ms']);
  for (let n = 1; n <= Number(values.count); n++) {
    const message = {
      protocol: 'tap/1.0',
      message_id: `${values.from}-${n}-${Math.random().toString(36).slice(2, 10)}`,
      type: 'ping',
      source: values.from,
      target: values.to,
      timestamp: new Date().toISOString(),
      payload: { n },
    };
    await writer.send(JSON.stringify(message));
    if (delay > 0) await new Promise((r) => setTimeout(r, delay));
  }
  out({ event: 'done', from: values.from, last: writer.lastSeq });
} else if (positionals[0] === 'read') {
  const log = new EffectLog(values.effects!);
  const applyDelay = Number(values['apply-delay-ms']);
  const readers = values.from!.split(',').map(
    (from) =>
      new MailboxReader({
        root: values.root!,
        to: values.to!,
        from,
        dedup: {
          has: (key) => log.has(`${from}/${key}`),
          add: async () => {},
        },
        pollMs: 50,
        deliver: async (frame, info) => {
          if (applyDelay > 0) await new Promise((r) => setTimeout(r, applyDelay));
          const msg = JSON.parse(Buffer.from(frame.bytes).toString('utf8')) as { message_id: string; payload: { n: number } };
          log.apply(`${from}/${info.key}`, {
            from,
            n: msg.payload.n,
            seq: info.seq,
            message_id: msg.message_id,
            redelivered: info.redelivered,
          });
        },
        onerror: (err) => process.stderr.write(`reader error: ${err.message}\n`),
      }),
  );
  for (const r of readers) await r.start();
  out({ event: 'ready' });
  const stop = async () => {
    await Promise.all(readers.map((r) => r.stop()));
    log.close();
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop());
} else {
  process.stderr.write('usage: mailbox-peer.testkit.ts write|read ...\n');
  process.exit(2);
}
