/** tapctl mesh trace <trace_id>: one trace rebuilt from the trace records, span under parent, and whether it is complete (spec: mesh#trace). */
import { otlpTrace } from '../../mesh/otlp.ts';
import { renderTrace, traceView } from '../../mesh/trace-view.ts';
import { parseOptions, positionals } from '../cli.ts';
import { CliError, type Command } from '../registry.ts';
import { printJson } from '../workspace/format.ts';
import { LOGS_HELP, loadRecords } from './logs.ts';

export const traceCommand: Command = {
  name: 'trace',
  summary: 'show one trace across every hop, and whether it is complete',
  help: `Usage: tapctl mesh trace <trace_id> [--logs PATH] [--records] [--json | --otlp]

Rebuilds a trace from the trace records: each span (one task.request) under the span that
caused it, with the requester, the agent, the task id, the attempt and the ending. A trace is
complete when every span has an ending and every parent span is in the trace; otherwise the
problems name the span where it breaks, and the exit status is 1.

A trace id may be given by its first characters when they name one trace.

Options:
${LOGS_HELP}
  --records     also print every record of the trace, in time order
  --json        print the trace (spans, problems, records) as JSON
  --otlp        print the trace as OTLP JSON (resourceSpans), the body an OpenTelemetry
                collector's OTLP/HTTP receiver takes at /v1/traces:
                curl -H 'content-type: application/json' --data @trace.json http://collector:4318/v1/traces
`,
  async run(args, ctx) {
    const { values, positionals: given } = parseOptions(args, {
      logs: { type: 'string' },
      records: { type: 'boolean' },
      json: { type: 'boolean' },
      otlp: { type: 'boolean' },
    });
    if (values.json && values.otlp) throw new CliError('--json and --otlp each print the trace; give one of them', { usage: true });
    const [wanted] = positionals(given, ['trace_id']);
    const records = loadRecords(values.logs, ctx);
    const ids = [...new Set(records.map((r) => r.trace_id).filter((t): t is string => t?.startsWith(wanted!) === true))];
    if (ids.length === 0)
      throw new CliError(`no trace ${wanted} in the trace records`, { hint: 'tapctl mesh tasks lists the traces there' });
    if (ids.length > 1 && !ids.includes(wanted!))
      throw new CliError(`${wanted} names ${ids.length} traces (${ids.slice(0, 3).join(', ')}…); give more of the id`, { usage: true });
    const view = traceView(ids.includes(wanted!) ? wanted! : ids[0]!, records);
    if (values.otlp) {
      printJson(ctx.io, otlpTrace(view));
      return view.problems.length === 0 ? 0 : 1;
    }
    if (values.json) {
      printJson(ctx.io, view);
      return view.problems.length === 0 ? 0 : 1;
    }
    ctx.io.out(`${renderTrace(view).join('\n')}\n`);
    if (values.records) for (const r of view.records) ctx.io.out(`  ${JSON.stringify(r)}\n`);
    return view.problems.length === 0 ? 0 : 1;
  },
};
