/** Where `tapctl mesh tasks` and `trace` read trace records: --logs, or TAP_MESH_LOGS (spec: mesh#trace-records). */
import { existsSync } from 'node:fs';
import { readTraceRecords, type SkippedLine } from '../../mesh/trace-view.ts';
import type { TraceRecord } from '../../mesh/trace.ts';
import { CliError, type CommandContext } from '../registry.ts';

/** The help lines of the --logs option. */
export const LOGS_HELP = `  --logs PATH   a trace-record file, or a directory of *.jsonl files, one record per line, as a
                Mesh writes them with traceSink: jsonLines(stream) (default: $TAP_MESH_LOGS)`;

/** Reads the records at --logs or $TAP_MESH_LOGS, or explains what to give. */
export function loadRecords(logs: string | undefined, ctx: CommandContext): TraceRecord[] {
  const path = logs ?? process.env.TAP_MESH_LOGS;
  if (!path) throw new CliError('no trace records to read: give --logs PATH or set TAP_MESH_LOGS', { usage: true });
  if (!existsSync(path))
    throw new CliError(`there is no file or directory ${path}`, { where: path, hint: 'point --logs at the trace records a Mesh wrote' });
  const skipped: SkippedLine[] = [];
  const records = readTraceRecords(path, (line) => skipped.push(line));
  // Said, not dropped: a torn last line is a process killed while it wrote; others are damage.
  if (skipped.length > 0) {
    const first = skipped[0]!;
    ctx.io.err(
      `${ctx.program}: ${skipped.length} line(s) of ${path} are not trace records and were left out; the first, ${first.file}:${first.line}, is ${first.reason}\n`,
    );
  }
  return records;
}
