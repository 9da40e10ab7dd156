/** bench/profile-top.ts as the README runs it: a glob of profiles and a count. */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { ROOT } from './lib/paths.ts';

/** A profile of one root calling `names` in turn, each for `ms` per sample. */
function profile(names: string[], ms: number): object {
  const nodes = [{ id: 1, callFrame: { functionName: '(root)', url: '', lineNumber: -1 }, children: names.map((_, i) => i + 2) }];
  names.forEach((n, i) => nodes.push({ id: i + 2, callFrame: { functionName: n, url: 'file:///x.js', lineNumber: i }, children: [] }));
  return { nodes, samples: names.map((_, i) => i + 2), timeDeltas: names.map(() => ms * 1000) };
}

it('reads the largest of several profiles (the main thread beside the loader thread) and prints the count asked for', () => {
  const dir = mkdtempSync(join(tmpdir(), 'tap-profile-top-'));
  try {
    writeFileSync(join(dir, 'a.cpuprofile'), JSON.stringify(profile(['loader'], 1)));
    writeFileSync(join(dir, 'b.cpuprofile'), JSON.stringify(profile(['decode', 'write', 'parse', 'gc'], 10)));
    const run = spawnSync(
      process.execPath,
      ['--import', 'tsx', join(ROOT, 'bench', 'profile-top.ts'), join(dir, 'a.cpuprofile'), join(dir, 'b.cpuprofile'), '2'],
      {
        cwd: ROOT,
        encoding: 'utf8',
      },
    );
    expect(run.stderr).toBe('');
    const lines = run.stdout.trim().split('\n');
    expect(lines[0]).toBe(`${join(dir, 'b.cpuprofile')} (the largest of 2 profiles)`);
    expect(lines[1]).toMatch(/^0\.04 s sampled, 0\.04 s not idle/);
    expect(lines.slice(2).map((l) => l.trim().split(/\s+/)[0])).toEqual(['25.0%', '25.0%']);
    expect(lines).toHaveLength(4);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
