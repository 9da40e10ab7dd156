/**
 * The floor of the workspace race: the same two renames per task and nothing else. Watches
 * DIR/pending; for each file, renames it to DIR/processing (losing the race is ENOENT) and then
 * to DIR/completed. No reads, no checks, no fsync. Prints "ready" once it watches.
 * Usage: bare-racer.ts --root DIR
 */
import { promises as fsp, watch } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

const { values } = parseArgs({ options: { root: { type: 'string' } } });
const root = values.root!;
const pending = join(root, 'pending');
let scanning = false;
let again = false;

async function scan(): Promise<void> {
  if (scanning) {
    again = true;
    return;
  }
  scanning = true;
  do {
    again = false;
    for (const name of await fsp.readdir(pending)) {
      const claimed = join(root, 'processing', name.replace(/\.tap\.json$/, '@1.tap.json'));
      try {
        await fsp.rename(join(pending, name), claimed);
      } catch {
        continue; // another racer was faster
      }
      await fsp.rename(claimed, join(root, 'completed', name));
    }
  } while (again);
  scanning = false;
}

watch(pending, () => void scan());
setInterval(() => void scan(), 100);
process.on('SIGTERM', () => process.exit(0));
process.stdout.write('ready\n');
