/**
 * `tapctl gen-types --lang <ts|python|go|rust> --out <dir>`: types for other languages,
 * generated from the JSON Schemas in schemas/v1 (one type per message and a dispatcher on
 * `type`). The generators live next to it.
 */
import { CliError, type Command } from '../registry.ts';
import { parseGenTypesArgs, usage, writeTypes } from './main.ts';

export const genTypesCommand: Command = {
  name: 'gen-types',
  summary: 'generate TypeScript, Python, Go or Rust types from the TAP JSON Schemas',
  help: usage('tapctl gen-types').trimEnd(),
  async run(args, ctx) {
    const parsed = parseGenTypesArgs(args);
    if (!parsed.ok) throw new CliError(parsed.error, { usage: true, hint: parsed.hint });
    if (parsed.help) {
      ctx.io.out(`${usage('tapctl gen-types')}`);
      return 0;
    }
    let written: string[];
    try {
      written = await writeTypes(parsed.lang, parsed.out, { goPackage: parsed.goPackage });
    } catch (err) {
      throw new CliError(`could not write the ${parsed.lang} types: ${(err as Error).message}`, {
        where: parsed.out,
        hint: 'Check that the folder is writable, or give another --out.',
      });
    }
    for (const path of written) ctx.io.out(`wrote ${path}\n`);
    return 0;
  },
};
