/**
 * gen-types for the sources of a clone: `npx tsx tools/gen-types/main.ts --lang <ts|python|go|rust> --out <dir>`
 * (`npm run gen:types`). The generators ship with tapctl, in reference/tapctl/gen-types/.
 */
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { runGenTypes } from '../../reference/tapctl/gen-types/main.ts';

export * from '../../reference/tapctl/gen-types/main.ts';

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  process.exitCode = await runGenTypes(process.argv.slice(2));
}
