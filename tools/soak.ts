/**
 * The standing attack suite: a fuzzer over stdio and WebSocket (generated, mutated, deeply
 * nested and every malformed fixture in fixtures/invalid), the eviction and amplification
 * attacks, SIGKILLs mid-task with --state-dir, a torn-journal restart and hostile agents under
 * tap-conform, and the attacks on a shared NATS server configured with the permission model
 * (forged records, planted results, registry takeover and flood, a session lockout, an absurd
 * keepalive, a peer that never reads), all on 127.0.0.1 and bounded in time. It prints its figures
 * and exits 1 on any crash, lost task, doubled effect, unanswered frame, unbounded growth, leftover
 * process or attack that got through.
 *
 * Usage: tsx tools/soak.ts [--short] [--seed N] [--frames N] [--kills N] [--rss-limit-mb N] [--only a,b]
 *   --short   a short run (for the test suite); the default run takes a few minutes
 *   --only    run only these steps: fuzz, eviction, amplification, kills, torn, hostile, shared
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { parseArgs } from 'node:util';
import { amplify, evict, fuzz } from './soak/attacks.ts';
import { configure, figures, notes, ROOT, settings, sleep } from './soak/common.ts';
import { hostile, kills, leftovers, torn } from './soak/durable.ts';
import { sharedFigures, sharedServer } from './soak/shared-server.ts';
import { lacks } from '../test/system-tools.testkit.ts';

const { values } = parseArgs({
  options: {
    short: { type: 'boolean', default: false },
    seed: { type: 'string', default: '20250314' },
    frames: { type: 'string' },
    kills: { type: 'string' },
    'rss-limit-mb': { type: 'string', default: '512' },
    only: { type: 'string' },
  },
});
const short = values.short === true;
configure({
  short,
  frames: Number(values.frames ?? (short ? 3_000 : 100_000)),
  kills: Number(values.kills ?? (short ? 2 : 50)),
  rssLimitKb: Number(values['rss-limit-mb']) * 1024,
  seed: Number(values.seed),
});

async function main(): Promise<void> {
  const started = Date.now();
  const dir = mkdtempSync(join(tmpdir(), 'tap-soak-'));
  const only = values.only?.split(',');
  const step = async (name: string, fn: () => Promise<unknown>): Promise<void> => {
    if (only && !only.includes(name.split(' ')[0]!)) return;
    const t = Date.now();
    process.stderr.write(`soak: ${name}…\n`);
    try {
      await fn();
    } catch (err) {
      figures.crashes++;
      notes.push(`${name} could not finish: ${(err as Error).message}`);
    }
    notes.push(`${name}: ${((Date.now() - t) / 1000).toFixed(1)} s`);
  };
  try {
    await step('fuzz', fuzz);
    await step('eviction', evict);
    await step('amplification', amplify);
    let resume: { session_id: string; resume_token: string } | undefined;
    await step('kills', async () => (resume = await kills(dir)));
    await step('torn journal', async () => torn(dir, resume ?? (await kills(dir))));
    if (process.platform === 'linux') await step('hostile agents', hostile);
    if (lacks('nats-server')) notes.push('shared server: not run, nats-server missing (apt-get install nats-server)');
    else await step('shared server attacks', sharedServer);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  await sleep(500);
  const left = process.platform === 'linux' ? leftovers() : [];
  figures.leftover_processes = left.length;
  for (const pid of left) process.kill(pid, 'SIGKILL');

  console.log(
    `tap soak (${settings.short ? 'short' : 'full'}, seed ${values.seed}) in ${((Date.now() - started) / 1000).toFixed(1)} s, from ${relative(process.cwd(), ROOT) || '.'}`,
  );
  for (const [k, v] of Object.entries({ ...figures, ...sharedFigures })) console.log(`  ${k.padEnd(26)} ${v}`);
  for (const n of notes) console.log(`  - ${n}`);
  const failures = [
    figures.crashes > 0 && 'crashes',
    figures.unanswered_frames > 0 && 'unanswered frames',
    figures.tasks_lost > 0 && 'lost tasks',
    figures.effects_doubled > 0 && 'doubled effects',
    figures.eviction_effects_doubled > 0 && 'an idempotency record evicted by another principal',
    figures.torn_journal_lost > 0 && 'a task lost after a torn journal',
    figures.peak_rss_kb > settings.rssLimitKb && `peak RSS above ${settings.rssLimitKb} KB`,
    figures.amplification_growth_kb > settings.rssLimitKb / 2 && 'unbounded growth under amplification',
    figures.harness_hung > 0 && 'a hung harness',
    figures.leftover_processes > 0 && 'leftover processes',
    sharedFigures.forged_records_run > 0 && 'forged durable records that ran',
    sharedFigures.forbidden_writes_accepted > 0 && 'writes the permission model forbids, accepted',
    sharedFigures.forged_entries_routed_to > 0 && 'forged registry entries routed to',
    sharedFigures.session_lockouts > 0 && 'a requester locked out',
    sharedFigures.absurd_keepalives_accepted > 0 && 'an absurd keepalive accepted',
    sharedFigures.unread_warning_lines > 1 && 'the unread warning logged more than once',
    sharedFigures.unread_peak_rss_kb > settings.rssLimitKb && `the unread peer's agent above ${settings.rssLimitKb} KB`,
  ].filter(Boolean);
  if (failures.length > 0) {
    console.log(`soak FAILED: ${failures.join(', ')}`);
    process.exit(1);
  }
  console.log('soak passed: 0 crashes, 0 lost, 0 doubled, 0 leftover processes, 0 attacks through');
  process.exit(0);
}

await main();
