/**
 * `tapctl health <url>` and `tapctl metrics <url>`: read an agent's monitoring endpoints (its
 * --metrics-port, or its --listen port when that serves them): GET /healthz and GET /metrics.
 */
import { ExpositionError, parseExposition } from '../ops/exposition-parse.ts';
import { parseOptions, positionals } from './cli.ts';
import { CliError, type Command, type CommandContext } from './registry.ts';
import { printJson } from './workspace/format.ts';

/** The URL of an endpoint: http(s) as given, ws(s) read as the same port; without a path, `path`. */
export function endpointUrl(given: string, path: '/healthz' | '/metrics'): URL {
  let url: URL;
  try {
    url = new URL(given);
  } catch {
    throw new CliError(`${given} is not a URL`, { usage: true, hint: "Give one like http://127.0.0.1:9464 (the agent's --metrics-port)." });
  }
  const fromWebSocket = url.protocol === 'ws:' || url.protocol === 'wss:';
  if (fromWebSocket) url = new URL(url.href.replace(/^ws/, 'http'));
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new CliError(`${given} is not an http:// URL`, {
      usage: true,
      hint: "Give the agent's monitoring address, e.g. http://127.0.0.1:9464.",
    });
  // A ws:// URL names the session path; the same port answers the endpoint's own path.
  if (fromWebSocket || url.pathname === '/') url.pathname = path;
  return url;
}

/** GETs `url`; a connection failure becomes one line that says what to check. */
async function get(url: URL, ctx: CommandContext): Promise<{ status: number; text: string }> {
  try {
    const res = await fetch(url, { signal: AbortSignal.any([ctx.signal, AbortSignal.timeout(5000)]) });
    return { status: res.status, text: await res.text() };
  } catch (err) {
    const cause = (err as { cause?: { code?: string } }).cause?.code ?? (err as Error).message;
    throw new CliError(`could not read ${url.href}: ${cause}`, {
      hint: 'Is the agent running with --metrics-port (or TAP_METRICS_PORT), and is this its host and port?',
      code: 'UNREACHABLE',
    });
  }
}

const HEALTH_HELP = `Usage: tapctl health <url> [--json]

Reads an agent's GET /healthz: ready (200) or draining (503, a shutdown under way), with its
sessions, connections, running tasks and the head of its audit trail. <url> is the agent's
monitoring address (its --metrics-port, e.g. http://127.0.0.1:9464, or its ws:// --listen URL
when the same port serves them). Exits 0 when the agent is ready, 1 otherwise.

Options:
  --json   print the report as the agent sent it`;

export const healthCommand: Command = {
  name: 'health',
  summary: "read an agent's health: ready or draining, sessions, running tasks",
  help: HEALTH_HELP,
  async run(args, ctx) {
    const { values, positionals: given } = parseOptions(args, { json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } });
    if (values.help) {
      ctx.io.out(`${HEALTH_HELP}\n`);
      return 0;
    }
    const [address] = positionals(given, ['url']);
    const url = endpointUrl(address!, '/healthz');
    const { status, text } = await get(url, ctx);
    let report: Record<string, unknown>;
    try {
      report = JSON.parse(text) as Record<string, unknown>;
    } catch {
      throw new CliError(`${url.href} answered ${status} with no health report`, {
        hint: 'Check the path: the agent answers /healthz.',
        code: 'NOT_HEALTH',
      });
    }
    if (values.json) printJson(ctx.io, report);
    else {
      const { status: state, ...figures } = report;
      const lines = [`${String(report.agent_id ?? url.host)}: ${String(state)} (HTTP ${status})`];
      for (const [k, v] of Object.entries(figures))
        if (k !== 'agent_id') lines.push(`  ${k}: ${typeof v === 'object' ? JSON.stringify(v) : String(v)}`);
      ctx.io.out(`${lines.join('\n')}\n`);
    }
    return status === 200 ? 0 : 1;
  },
};

const METRICS_HELP = `Usage: tapctl metrics <url> [--match TEXT] [--raw | --json]

Reads an agent's GET /metrics (the Prometheus text format), checks that it parses, and prints
its samples, one per line: name{labels} value. <url> is the agent's monitoring address, as for
tapctl health. The series are listed in the README, "Running a mesh in production".

Options:
  --match TEXT   only the samples whose name contains TEXT (e.g. tap_tasks)
  --raw          print the text as the agent served it
  --json         print the parsed families as JSON`;

export const metricsCommand: Command = {
  name: 'metrics',
  summary: "read an agent's Prometheus metrics: sessions, tasks by state, BUSY refusals, durations",
  help: METRICS_HELP,
  async run(args, ctx) {
    const { values, positionals: given } = parseOptions(args, {
      match: { type: 'string' },
      raw: { type: 'boolean' },
      json: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    });
    if (values.help) {
      ctx.io.out(`${METRICS_HELP}\n`);
      return 0;
    }
    const [address] = positionals(given, ['url']);
    const url = endpointUrl(address!, '/metrics');
    const { status, text } = await get(url, ctx);
    if (status !== 200)
      throw new CliError(`${url.href} answered ${status}: ${text.trim().slice(0, 200)}`, {
        hint: 'The agent answers /metrics.',
        code: 'HTTP',
      });
    let families: ReturnType<typeof parseExposition>;
    try {
      families = parseExposition(text);
    } catch (err) {
      const line = err instanceof ExpositionError ? err.message : String(err);
      throw new CliError(`the metrics at ${url.href} do not parse: ${line}`, { code: 'BAD_METRICS' });
    }
    if (values.raw) {
      ctx.io.out(text);
      return 0;
    }
    const match = values.match ?? '';
    const chosen = [...families.values()].filter((f) => f.samples.some((s) => s.name.includes(match)));
    if (values.json) {
      printJson(ctx.io, chosen);
      return 0;
    }
    const lines: string[] = [];
    for (const f of chosen)
      for (const s of f.samples) {
        if (!s.name.includes(match)) continue;
        const labels = Object.entries(s.labels).map(([k, v]) => `${k}=${JSON.stringify(v)}`);
        lines.push(`${s.name}${labels.length ? `{${labels.join(',')}}` : ''} ${s.value}`);
      }
    ctx.io.out(lines.length ? `${lines.join('\n')}\n` : `no samples${match ? ` whose name contains "${match}"` : ''}\n`);
    return 0;
  },
};
