/** `tapctl audit verify <file...>`: checks an agent's audit trail, a file or a rotated set, and names the first broken line. */
import { existsSync } from 'node:fs';
import { verifyAuditFiles } from '../ops/audit-verify.ts';
import { parseOptions } from './cli.ts';
import { CliError, commandGroup, type Command } from './registry.ts';
import { printJson } from './workspace/format.ts';

const VERIFY_HELP = `Usage: tapctl audit verify <file...> [--head SHA256] [--json]

Checks the chain of an audit trail (an agent's --audit-file): every line a record whose seq
follows the one before and whose prev is the SHA-256 of the line before, across rotated files
too. Give the file, or the rotated set (FILE.2 FILE.1 FILE, in any order: they are read oldest
first, e.g. tapctl audit verify audit.jsonl*). Prints the records checked and the head (the last
record's seq and SHA-256); exits 1 naming the first line that was changed, deleted or moved.

A chain shows every change before its last record; to catch a change of the last records, or
lines cut off the end, keep the head elsewhere (the agent's /healthz reports it) and give it:

Options:
  --head SHA256  the last record must be this one
  --json         print the verdict as JSON`;

const verifyCommand: Command = {
  name: 'verify',
  summary: 'check an audit trail (a file or a rotated set) and name the first broken line',
  help: VERIFY_HELP,
  async run(args, ctx) {
    const { values, positionals: files } = parseOptions(args, {
      head: { type: 'string' },
      json: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    });
    if (values.help) {
      ctx.io.out(`${VERIFY_HELP}\n`);
      return 0;
    }
    if (files.length === 0) throw new CliError('missing <file>', { usage: true });
    for (const f of files)
      if (!existsSync(f))
        throw new CliError(`no audit file ${f}`, {
          where: f,
          hint: 'Give the --audit-file of the agent, and its rotated FILE.<n>.',
          code: 'NO_FILE',
        });
    const verdict = verifyAuditFiles(files, values.head !== undefined ? { head: values.head } : {});
    if (values.json) {
      printJson(ctx.io, verdict);
      return verdict.ok ? 0 : 1;
    }
    if (!verdict.ok) {
      const p = verdict.problem!;
      ctx.io.err(`${ctx.program}: the audit trail is broken: ${p.file} line ${p.line} ${p.message}\n  where: ${p.file}:${p.line}\n`);
      return 1;
    }
    const from =
      verdict.firstSeq !== undefined && verdict.firstSeq > 1
        ? ` (from record ${verdict.firstSeq}: the records before it were rotated away)`
        : '';
    const head = verdict.head ? `; head: record ${verdict.head.seq}, sha256 ${verdict.head.sha256}` : '';
    ctx.io.out(
      `ok: ${verdict.records} records in ${verdict.files.length} file${verdict.files.length === 1 ? '' : 's'} chain${from}${head}\n`,
    );
    return 0;
  },
};

export const auditCommand = commandGroup('audit', "Check an agent's audit trail: one chained record per finished task.", [verifyCommand]);
