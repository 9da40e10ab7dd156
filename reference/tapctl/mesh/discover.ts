/** tapctl mesh discover: the live agents that offer a capability in a version range (spec: registry#discovery). */
import type { EndpointBinding } from '../../mesh/entry.ts';
import { CliError, type Command } from '../registry.ts';
import { parseOptions, positionals } from '../cli.ts';
import { printJson, table } from '../workspace/format.ts';
import { NATS_HELP, NATS_OPTION, listingOptions, listMatching, recordJson, recordRow, warnTruncated, withRegistry } from './registry.ts';

const BINDINGS: readonly EndpointBinding[] = ['nats', 'websocket'];

export const discoverCommand: Command = {
  name: 'discover',
  summary: 'find the agents that offer a capability, by version range, permissions and binding',
  help: `Usage: tapctl mesh discover <capability> [--version RANGE] [--permission P]... [--binding B] [--not-full]
       [--nats URL] [--trust FILE] [--max-entries N] [--budget-ms MS] [--json]

Finds the live entries of the mesh's registry whose card offers <capability> in a version that
satisfies RANGE (npm-style: ^1.2, ~1.2.3, >=1 <2, 1.x, a - b, ||), that a requester holding the
given permissions may use, and that can be reached over binding B. Exits 1 when none matches.

Options:
  --version RANGE    a version range (default: any version)
  --permission P     a permission the requester holds; repeat for several. Without it,
                     capabilities that require a permission match too
  --binding B        nats or websocket: only agents with an endpoint of that binding
  --not-full         leave out agents running as many tasks as they allow
${NATS_HELP}
  --json             print the matching entries as JSON
`,
  async run(args, ctx) {
    const { values, positionals: given } = parseOptions(args, {
      ...NATS_OPTION,
      version: { type: 'string' },
      permission: { type: 'string', multiple: true },
      binding: { type: 'string' },
      'not-full': { type: 'boolean' },
      json: { type: 'boolean' },
    });
    const [capability] = positionals(given, ['capability']);
    const binding = values.binding as EndpointBinding | undefined;
    if (binding !== undefined && !BINDINGS.includes(binding))
      throw new CliError(`--binding ${binding} is not a binding with endpoints`, { usage: true, hint: 'Give nats or websocket.' });
    const permissions = values.permission as unknown as string[] | undefined;
    const listing = listingOptions(values);
    const found = await withRegistry(
      values,
      (registry) =>
        listMatching(registry, {
          capability,
          version: values.version,
          ...(permissions ? { permissions } : {}),
          ...(binding ? { binding } : {}),
          notFull: values['not-full'] === true,
        }),
      listing,
    );
    warnTruncated(ctx.io, found, listing.trust !== undefined);
    const { records } = found;
    const now = Date.now();
    if (values.json) {
      printJson(
        ctx.io,
        records.map((r) => recordJson(r, now)),
      );
      return records.length > 0 ? 0 : 1;
    }
    const wanted = `${capability}${values.version ? ` ${values.version}` : ''}`;
    if (records.length === 0) {
      ctx.io.err(`No live agent in the mesh offers ${wanted}.\n`);
      return 1;
    }
    const rows = records.map((r) => {
      const cap = r.entry.card.capabilities.find((c) => c.name === capability);
      return [`${cap?.name}@${cap?.version}`, ...recordRow(r, now)];
    });
    ctx.io.out(
      `${records.length} agent${records.length === 1 ? '' : 's'} offer${records.length === 1 ? 's' : ''} ${wanted}\n${table(rows)}`,
    );
    return 0;
  },
};
