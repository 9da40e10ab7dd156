/**
 * `npm run bench`: measures TAP against the floor of each transport and against other
 * agent-protocol SDKs, every baseline in the same run, and writes bench/results/latest.json and
 * latest.md. `--quick` runs every row with tiny counts (a smoke run, not a measurement). TAP is
 * the package as built (dist/, by npm run build, which `npm run bench` runs first), in this process
 * and in every child.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { compilePeers } from './lib/children.ts';
import { describeMachine, loadavg } from './lib/machine.ts';
import { parseCli, USAGE, type Config } from './lib/options.ts';
import { BENCH } from './lib/paths.ts';
import { notRun, renderMarkdown, type BenchResult, type Row } from './lib/report.ts';
import { oneLine } from './scenarios/roundtrip.ts';
import { ALL_ROWS, SCENARIOS } from './scenarios/index.ts';

function log(line: string): void {
  process.stderr.write(`${line}\n`);
}

async function runAll(cfg: Config): Promise<BenchResult> {
  const started = new Date();
  const t0 = performance.now();
  const machine = describeMachine();
  const selected = (id: string): boolean => cfg.only.length === 0 || cfg.only.some((p) => id.startsWith(p));
  const rows: Row[] = [];
  for (const scenario of SCENARIOS) {
    const wanted = scenario.rows.filter(selected);
    if (wanted.length === 0) continue;
    let produced: Row[];
    try {
      produced = await scenario.run(cfg.budget, selected, log);
    } catch (err) {
      log(`${scenario.name} failed: ${oneLine(err)}`);
      produced = [];
    }
    // A row the scenario did not produce is reported as not run, never left out.
    for (const id of wanted) {
      const row = produced.find((r) => r.id === id);
      rows.push(
        row ??
          notRun({ id, scenario: scenario.name, title: id, unit: '', better: 'higher', method: '' }, `${scenario.name} produced no figure`),
      );
    }
  }
  machine.load_after = loadavg();
  return {
    tool: 'tap-bench',
    mode: cfg.budget.mode,
    started_at: started.toISOString(),
    duration_ms: Math.round(performance.now() - t0),
    machine,
    rows,
  };
}

async function main(): Promise<number> {
  let cfg: Config;
  try {
    cfg = parseCli(process.argv.slice(2), join(BENCH, 'results'));
  } catch (err) {
    process.stderr.write(`bench: ${oneLine(err)}\nRun npm run bench -- --help for usage.\n`);
    return 2;
  }
  if (cfg.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const unknown = cfg.only.filter((p) => !ALL_ROWS.some((id) => id.startsWith(p)));
  if (unknown.length > 0) {
    process.stderr.write(`bench: no row starts with ${unknown.join(', ')}; rows: ${ALL_ROWS.join(', ')}\n`);
    return 2;
  }
  log(`tap bench, ${cfg.budget.mode} run${cfg.only.length ? ` of ${cfg.only.join(', ')}` : ''}`);
  try {
    await compilePeers();
  } catch (err) {
    process.stderr.write(`bench: could not compile the peer scripts: ${oneLine(err)}\n`);
    return 1;
  }
  const result = await runAll(cfg);
  const markdown = renderMarkdown(result);
  mkdirSync(cfg.out, { recursive: true });
  const json = JSON.stringify(result, null, 2) + '\n';
  writeFileSync(join(cfg.out, 'latest.json'), json);
  writeFileSync(join(cfg.out, 'latest.md'), markdown);
  if (cfg.sample) {
    const date = result.started_at.slice(0, 10);
    writeFileSync(join(cfg.out, `sample-${date}.json`), json);
    writeFileSync(join(cfg.out, `sample-${date}.md`), markdown);
  }
  process.stdout.write(markdown);
  log(`wrote ${join(cfg.out, 'latest.json')} and latest.md in ${(result.duration_ms / 1000).toFixed(0)} s`);
  return 0;
}

process.exitCode = await main();
// Children and sockets are closed; timers of closed clients must not hold the process.
setTimeout(() => process.exit(process.exitCode ?? 0), 200).unref();
