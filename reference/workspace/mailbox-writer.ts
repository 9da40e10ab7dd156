/**
 * The writing side of a mailbox `mailboxes/<to>/<from>/`: one file per message,
 * `<seq:020>.tap.json`, numbered by a counter the single writer persists in `.seq` before it
 * publishes the message that uses the new number (spec: bindings-workspace#mailboxes).
 */
import { join } from 'node:path';
import { WorkspaceError } from './errors.ts';
import { ensureDir, listNames, publishNew, readJsonFile, writeAtomic } from './fsio.ts';
import { isIdentifier } from './layout.ts';

/** The file name of message number `seq`: twenty digits and `.tap.json`. */
export function mailboxFileName(seq: number): string {
  return `${String(seq).padStart(20, '0')}.tap.json`;
}

const MAILBOX_NAME = /^(\d{20})\.tap\.json$/;

/** The sequence number of a mailbox file name, or null for any other name. */
export function parseMailboxName(name: string): number | null {
  const m = MAILBOX_NAME.exec(name);
  if (!m) return null;
  const n = Number(m[1]);
  return Number.isSafeInteger(n) && n > 0 ? n : null;
}

/** `mailboxes/<to>/<from>/` under a workspace root; refuses ids that are not identifiers. */
export function mailboxDir(root: string, to: string, from: string): string {
  for (const [what, id] of [
    ['recipient', to],
    ['sender', from],
  ] as const) {
    if (!isIdentifier(id)) throw new WorkspaceError('BAD_ID', `mailbox ${what} ${JSON.stringify(id)} is not a valid agent id`);
  }
  return join(root, 'mailboxes', to, from);
}

/** Writes messages from `from` to `to`; there must be one writer per mailbox (spec: bindings-workspace#mailboxes). */
export class MailboxWriter {
  readonly dir: string;
  private seq = 0;
  private opening: Promise<void> | null = null;
  private chain: Promise<unknown> = Promise.resolve();

  constructor(
    readonly root: string,
    readonly to: string,
    readonly from: string,
  ) {
    this.dir = mailboxDir(root, to, from);
  }

  /** Creates the mailbox and restores the counter: the larger of `.seq` and the highest number still in the mailbox. */
  open(): Promise<void> {
    this.opening ??= (async () => {
      await ensureDir(this.dir);
      const stored = await readJsonFile(join(this.dir, '.seq'));
      let seq = typeof stored === 'number' && Number.isSafeInteger(stored) && stored >= 0 ? stored : 0;
      for (const name of [...(await listNames(this.dir)), ...(await listNames(join(this.dir, '.inflight')))]) {
        seq = Math.max(seq, parseMailboxName(name) ?? 0);
      }
      this.seq = seq;
    })();
    return this.opening;
  }

  /** Publishes one message; resolves with its sequence number once it is durable. Sends are serialized. */
  send(data: string | Uint8Array): Promise<number> {
    const run = this.chain.then(async () => {
      await this.open();
      const n = this.seq + 1;
      // spec: bindings-workspace#mailboxes — the counter is durable before the number is used.
      await writeAtomic(join(this.dir, '.seq'), `${n}\n`);
      this.seq = n;
      await publishNew(join(this.dir, mailboxFileName(n)), data);
      return n;
    });
    this.chain = run.catch(() => {});
    return run;
  }

  /** The last number used. */
  get lastSeq(): number {
    return this.seq;
  }
}
