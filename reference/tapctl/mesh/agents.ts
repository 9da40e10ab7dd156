/** tapctl mesh agents: every live entry of the registry, with load, heartbeat age and capabilities (spec: registry#entry). */
import type { Command } from '../registry.ts';
import { parseOptions, positionals } from '../cli.ts';
import { printJson, table } from '../workspace/format.ts';
import {
  NATS_HELP,
  NATS_OPTION,
  listingOptions,
  listMatching,
  recordJson,
  recordRow,
  refusedText,
  warnTruncated,
  withRegistry,
} from './registry.ts';

export const agentsCommand: Command = {
  name: 'agents',
  summary: 'list the agents in the mesh: load, last heartbeat, capabilities, endpoints',
  help: `Usage: tapctl mesh agents [--nats URL] [--trust FILE] [--max-entries N] [--budget-ms MS] [--json]

Lists every live entry of the mesh's registry (the key-value bucket TAP_REGISTRY): each agent's
running tasks against its limit, how long ago its entry was renewed and how long it lives
without another heartbeat, where it accepts sessions, and its capabilities with their versions.
Entries whose lifetime has passed are not shown, even while the server still holds them.
Values that are not valid entries, or (with --trust) not signed by their agent's key, are
listed apart as refused, with the reason; with --json, on stderr.

Options:
${NATS_HELP}
  --json       print the entries as JSON, with revision, written_at and expires_in_ms
`,
  async run(args, ctx) {
    const { values, positionals: given } = parseOptions(args, { ...NATS_OPTION, json: { type: 'boolean' } });
    positionals(given, []);
    const listing = listingOptions(values);
    const found = await withRegistry(values, (registry) => listMatching(registry, {}), listing);
    const { records } = found;
    const trusted = listing.trust !== undefined;
    const now = Date.now();
    if (values.json) {
      printJson(
        ctx.io,
        records.map((r) => recordJson(r, now)),
      );
      const refused = refusedText(found.refused, trusted);
      if (refused) ctx.io.err(refused.trimStart());
      warnTruncated(ctx.io, found, trusted);
      return 0;
    }
    if (records.length === 0) {
      ctx.io.out(`No agent is in the mesh.\n${refusedText(found.refused, trusted)}`);
      warnTruncated(ctx.io, found, trusted);
      return 0;
    }
    let text = `${records.length} agent${records.length === 1 ? '' : 's'} in the mesh${trusted ? ', each signed by its key in the trust file' : ''}\n`;
    for (const r of records) {
      text += `\n${table([recordRow(r, now)], '')}`;
      const caps = r.entry.card.capabilities.map(
        (c) => `${c.name}@${c.version}${c.requires_permission ? ` (needs ${c.requires_permission})` : ''}`,
      );
      text += `  instance ${r.entry.instance}, up since ${r.entry.started_at}\n`;
      text += `  capabilities: ${caps.join(', ') || '(none)'}\n`;
    }
    ctx.io.out(text + refusedText(found.refused, trusted));
    warnTruncated(ctx.io, found, trusted);
    return 0;
  },
};
