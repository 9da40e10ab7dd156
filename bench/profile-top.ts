/**
 * Prints the functions with the most self time in a V8 CPU profile (from `node --cpu-prof`),
 * grouped by function and file, with paths relative to the repository.
 * Usage: npx tsx bench/profile-top.ts <file.cpuprofile>... [count] (of several files, the largest)
 */
import { readFileSync, statSync } from 'node:fs';
import { ROOT } from './lib/paths.ts';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const args = process.argv.slice(2);
const countText = args.find((a) => /^\d+$/.test(a));
const files = args.filter((a) => a !== countText);
if (files.length === 0) {
  process.stderr.write('Usage: npx tsx bench/profile-top.ts <file.cpuprofile>... [count]\n');
  process.exit(2);
}
// `node --cpu-prof --import tsx` also profiles the loader's thread: of several files, the largest is the main thread's.
const file = files.reduce((a, b) => (statSync(b).size > statSync(a).size ? b : a));
if (files.length > 1) process.stdout.write(`${file} (the largest of ${files.length} profiles)\n`);
const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
const self = new Map<string, number>();
let total = 0;
profile.samples.forEach((id, i) => {
  const dt = profile.timeDeltas[i] ?? 0;
  total += dt;
  const frame = nodes.get(id)!.callFrame;
  const where = frame.url.replace(`file://${ROOT}/`, '').replace(/^file:\/\//, '');
  const key = `${frame.functionName || '(anonymous)'}  ${where ? `${where}:${frame.lineNumber + 1}` : ''}`.trim();
  self.set(key, (self.get(key) ?? 0) + dt);
});
const busy = total - (self.get('(idle)') ?? 0);
process.stdout.write(
  `${(total / 1e6).toFixed(2)} s sampled, ${(busy / 1e6).toFixed(2)} s not idle; self time, share of the non-idle time:\n`,
);
for (const [key, t] of [...self]
  .filter(([k]) => k !== '(idle)')
  .sort((a, b) => b[1] - a[1])
  .slice(0, Number(countText ?? 25))) {
  process.stdout.write(`${((t / busy) * 100).toFixed(1).padStart(5)}%  ${(t / 1000).toFixed(0).padStart(6)} ms  ${key}\n`);
}
