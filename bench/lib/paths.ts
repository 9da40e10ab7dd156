/** Where things are: the repository root, the bench folder, the peer scripts. */
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The bench folder. */
export const BENCH = join(dirname(fileURLToPath(import.meta.url)), '..');
/** The repository root. */
export const ROOT = join(BENCH, '..');
/** A script in bench/peers/. */
export const peer = (name: string): string => join(BENCH, 'peers', name);
