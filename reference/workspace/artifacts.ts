/**
 * Artifact references that can never leave `artifacts/`: syntax refused up front (absolute, "..",
 * backslash, NUL), paths resolved without following symbolic links, and each opened file verified
 * to lie inside `artifacts/` with a single link (spec: bindings-workspace#artifacts).
 */
import { promises as fsp, constants as fsc, type Stats } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import type { Workspace } from './workspace.ts';
import { WorkspaceError } from './errors.ts';
import { TMP_PREFIX, errnoOf, fsyncDir, isMissing, randomHex } from './fsio.ts';
import type { RecordProblem, TaskRecord } from './record.ts';

/** The registry code a refused artifact path ends a phase with: INVALID_MESSAGE for bad syntax, PERMISSION_DENIED for an escape. */
export type ArtifactCode = 'INVALID_MESSAGE' | 'PERMISSION_DENIED';

/** An artifact path the library refuses, with the code the phase ends with. */
export class ArtifactRefused extends WorkspaceError {
  constructor(
    readonly artifact: string,
    readonly tapCode: ArtifactCode,
    reason: string,
  ) {
    super(
      'ARTIFACT_REFUSED',
      `artifact path ${JSON.stringify(artifact)} refused: ${reason}`,
      undefined,
      'Artifact paths are relative to artifacts/ and must stay inside it.',
      {
        code: tapCode,
      },
    );
  }
}

/** The reason an artifact path breaks the syntax rules, or null (spec: bindings-workspace#artifacts). */
export function artifactSyntaxProblem(path: string): string | null {
  if (typeof path !== 'string' || path.length === 0) return 'it is empty';
  if (path.length > 1024) return 'it is longer than 1024 characters';
  if (path.includes('\u0000')) return 'it contains a NUL character';
  if ([...path].some(isControlOrSeparator)) return 'it contains a control character or a line break';
  if (path.includes('\\')) return 'it contains a backslash';
  if (path.startsWith('/')) return 'it is absolute';
  if (/^[A-Za-z]:/.test(path)) return 'it is absolute (a drive letter)';
  if (path.split('/').includes('..')) return 'it contains a ".." segment';
  if (segmentsOf(path).length === 0) return 'it names no file';
  return null;
}

/** C0 and C1 controls, DEL, U+2028 and U+2029: characters that end or break a line somewhere. */
function isControlOrSeparator(ch: string): boolean {
  const c = ch.codePointAt(0)!;
  return c <= 0x1f || (c >= 0x7f && c <= 0x9f) || c === 0x2028 || c === 0x2029;
}

function segmentsOf(path: string): string[] {
  return path.split('/').filter((s) => s !== '' && s !== '.');
}

function refuse(path: string, code: ArtifactCode, reason: string): never {
  throw new ArtifactRefused(path, code, reason);
}

async function lstatOrNull(path: string): Promise<Stats | null> {
  try {
    return await fsp.lstat(path);
  } catch (err) {
    if (isMissing(err) || errnoOf(err) === 'ENOTDIR') return null;
    throw err;
  }
}

/**
 * Walks the directories of `rel` below `artifacts/` without following links; refuses a symbolic
 * link or a non-directory on the way. With `create`, missing directories are made. Returns the
 * absolute path of the final component.
 */
async function walk(ws: Workspace, rel: string, create: boolean): Promise<string> {
  const syntax = artifactSyntaxProblem(rel);
  if (syntax) refuse(rel, 'INVALID_MESSAGE', syntax);
  const root = ws.paths.artifacts;
  const rootStat = await lstatOrNull(root);
  if (!rootStat || rootStat.isSymbolicLink() || !rootStat.isDirectory()) {
    refuse(rel, 'PERMISSION_DENIED', 'artifacts/ is not a plain directory');
  }
  const segs = segmentsOf(rel);
  let dir = root;
  for (let i = 0; i < segs.length - 1; i++) {
    const seg = segs[i]!;
    const next = join(dir, seg);
    const st = await lstatOrNull(next);
    if (!st) {
      if (!create) return join(next, ...segs.slice(i + 1));
      try {
        await fsp.mkdir(next);
        await fsyncDir(dir);
      } catch (err) {
        if (errnoOf(err) !== 'EEXIST') throw err;
      }
      const again = await lstatOrNull(next);
      if (!again || again.isSymbolicLink() || !again.isDirectory()) refuse(rel, 'PERMISSION_DENIED', `${seg} is not a plain directory`);
    } else if (st.isSymbolicLink()) {
      refuse(rel, 'PERMISSION_DENIED', `it passes through the symbolic link ${JSON.stringify(seg)}`);
    } else if (!st.isDirectory()) {
      refuse(rel, 'PERMISSION_DENIED', `${JSON.stringify(seg)} is not a directory`);
    }
    dir = next;
  }
  return join(dir, segs[segs.length - 1]!);
}

/**
 * Opens an artifact for reading, refusing anything that is not a regular file inside
 * `artifacts/` with exactly one link; the check is repeated on the open file, so a path swapped
 * for a link between the walk and the open is caught (spec: bindings-workspace#artifacts).
 */
export async function openArtifact(ws: Workspace, rel: string): Promise<FileHandle> {
  const abs = await walk(ws, rel, false);
  let fh: FileHandle;
  try {
    fh = await fsp.open(abs, fsc.O_RDONLY | fsc.O_NOFOLLOW | fsc.O_NONBLOCK);
  } catch (err) {
    if (errnoOf(err) === 'ELOOP') refuse(rel, 'PERMISSION_DENIED', 'it is a symbolic link');
    throw err;
  }
  try {
    const st = await fh.stat();
    if (!st.isFile()) refuse(rel, 'PERMISSION_DENIED', 'it is not a regular file');
    if (st.nlink !== 1) refuse(rel, 'PERMISSION_DENIED', `it has ${st.nlink} links (a hard link may point outside artifacts/)`);
    const [real, rootReal] = await Promise.all([fsp.realpath(abs), fsp.realpath(ws.paths.artifacts)]);
    if (real !== join(rootReal, ...segmentsOf(rel))) refuse(rel, 'PERMISSION_DENIED', 'it resolves outside artifacts/');
    const now = await fsp.lstat(abs);
    if (now.ino !== st.ino || now.dev !== st.dev) refuse(rel, 'PERMISSION_DENIED', 'it was replaced while being opened');
    return fh;
  } catch (err) {
    await fh.close();
    throw err;
  }
}

/** Reads a whole artifact through `openArtifact`. */
export async function readArtifact(ws: Workspace, rel: string): Promise<Buffer> {
  const fh = await openArtifact(ws, rel);
  try {
    return await fh.readFile();
  } finally {
    await fh.close();
  }
}

/** Writes an artifact atomically (temp file + fsync + rename) under `artifacts/`; returns the normalized relative path. */
export async function writeArtifact(ws: Workspace, rel: string, data: string | Uint8Array): Promise<string> {
  const abs = await walk(ws, rel, true);
  const dir = join(abs, '..');
  const tmp = join(dir, `${TMP_PREFIX}${randomHex(9)}`);
  const fh = await fsp.open(tmp, fsc.O_WRONLY | fsc.O_CREAT | fsc.O_EXCL, 0o644);
  try {
    await fh.writeFile(data);
    await fh.sync();
  } finally {
    await fh.close();
  }
  await fsp.rename(tmp, abs);
  await fsyncDir(dir);
  const normalized = segmentsOf(rel).join('/');
  (await openArtifact(ws, normalized)).close();
  return normalized;
}

/**
 * Checks every artifact a record refers to: a path that exists must pass `openArtifact`; a
 * missing one is not an escape and passes. Returns the problem that ends the phase, or null.
 */
export async function checkRecordArtifacts(ws: Workspace, record: TaskRecord): Promise<RecordProblem | null> {
  for (const [i, entry] of record.context.history.entries()) {
    for (const path of entry.artifacts) {
      try {
        const fh = await openArtifact(ws, path);
        await fh.close();
      } catch (err) {
        if (err instanceof ArtifactRefused) {
          return { code: err.tapCode, message: `history entry ${i} (${entry.phase}): ${err.message}` };
        }
        if (isMissing(err) || errnoOf(err) === 'ENOTDIR') continue;
        throw err;
      }
    }
  }
  return null;
}
