/** Artifact paths that can never leave artifacts/ (spec: bindings-workspace#artifacts). */
import { promises as fsp } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  ArtifactRefused,
  artifactSyntaxProblem,
  initWorkspace,
  openArtifact,
  readArtifact,
  writeArtifact,
  type Workspace,
} from './index.ts';
import { scratchDir } from './workspace.testkit.ts';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn().catch(() => {});
});

async function setup(): Promise<{ ws: Workspace; outside: string }> {
  const root = await scratchDir();
  const outside = await scratchDir('tap-outside-');
  cleanups.push(
    () => fsp.rm(root, { recursive: true, force: true }),
    () => fsp.rm(outside, { recursive: true, force: true }),
  );
  await fsp.writeFile(join(outside, 'secret.txt'), 'secret');
  return { ws: (await initWorkspace(root)).workspace, outside };
}

async function refusal(p: Promise<unknown>): Promise<ArtifactRefused> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ArtifactRefused);
  return err as ArtifactRefused;
}

describe('artifact paths (spec: bindings-workspace#artifacts)', () => {
  it('writes and reads artifacts inside artifacts/, creating directories', async () => {
    const { ws } = await setup();
    expect(await writeArtifact(ws, './reports//day-1/summary.md', '# ok')).toBe('reports/day-1/summary.md');
    expect((await readArtifact(ws, 'reports/day-1/summary.md')).toString()).toBe('# ok');
  });

  it('refuses "..", absolute paths, backslashes and NUL by syntax, as INVALID_MESSAGE', async () => {
    const { ws } = await setup();
    for (const [path, why] of [
      ['../secret.txt', '".." segment'],
      ['a/../../secret.txt', '".." segment'],
      ['/etc/passwd', 'absolute'],
      ['C:/x', 'drive letter'],
      ['a\\b', 'backslash'],
      ['a\u0000b', 'NUL'],
      ['', 'empty'],
    ] as const) {
      expect(artifactSyntaxProblem(path), path).toContain(why);
      const err = await refusal(readArtifact(ws, path));
      expect(err.tapCode).toBe('INVALID_MESSAGE');
      expect(err.message).toContain(JSON.stringify(path));
      await refusal(writeArtifact(ws, path, 'x'));
    }
  });

  it('refuses symbolic links that lead out, in a directory or as the file, as PERMISSION_DENIED', async () => {
    const { ws, outside } = await setup();
    await fsp.symlink(outside, join(ws.paths.artifacts, 'dir-link'));
    await fsp.symlink(join(outside, 'secret.txt'), join(ws.paths.artifacts, 'file-link'));
    const viaDir = await refusal(readArtifact(ws, 'dir-link/secret.txt'));
    expect(viaDir.tapCode).toBe('PERMISSION_DENIED');
    expect(viaDir.message).toMatch(/symbolic link "dir-link"/);
    const viaFile = await refusal(readArtifact(ws, 'file-link'));
    expect(viaFile.message).toMatch(/symbolic link/);
    // Writing through a linked directory is refused too, and nothing lands outside.
    await refusal(writeArtifact(ws, 'dir-link/planted.txt', 'x'));
    expect(await fsp.readdir(outside)).toEqual(['secret.txt']);
  });

  it('refuses a file with more than one link (a hard link may point outside)', async () => {
    const { ws, outside } = await setup();
    try {
      await fsp.link(join(outside, 'secret.txt'), join(ws.paths.artifacts, 'hard'));
    } catch {
      return; // tmpfs and the OS temp dir may be different file systems: nothing to test then
    }
    const err = await refusal(openArtifact(ws, 'hard'));
    expect(err.message).toMatch(/2 links/);
  });

  it('refuses an artifacts/ directory that is itself a symbolic link', async () => {
    const { ws, outside } = await setup();
    await fsp.rm(ws.paths.artifacts, { recursive: true });
    await fsp.symlink(outside, ws.paths.artifacts);
    const err = await refusal(readArtifact(ws, 'secret.txt'));
    expect(err.message).toMatch(/artifacts\/ is not a plain directory/);
  });
});
