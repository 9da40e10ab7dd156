/**
 * The claimed file and its lease while the agent works: the file as it was renamed from
 * pending/, never modified or replaced, progress only in sidecars, and the lease written right
 * after the claim and renewed at least every lease_ms / 3 (spec: bindings-workspace#claiming,
 * #leases).
 */
import { check, show, verdictOf } from '../../cases/kit.ts';
import type { CaseContext } from '../../context.ts';
import type { Outcome } from '../../verdict.ts';
import { fail, pass, timingWindow } from '../../verdict.ts';
import { finishWithin, needPhases, whereIs, wsCase } from '../kit.ts';
import { inodeOf, poll, readOrNull } from '../observe.ts';
import { PHASES, publishRecord, record } from '../records.ts';
import type { WorkspaceRun } from '../workspace-run.ts';

/** The claimed sleep task of a run, observed while it runs: the claimed file's bytes and the lease's renewals. */
interface ClaimWatch {
  id: string;
  claim: string | null;
  claimedAt?: number;
  sent: Buffer;
  /** Every distinct content (by bytes) and inode of the claimed file seen while it existed. */
  changes: string[];
  /** Times (ms after the claim) at which the lease file was seen with new bytes. */
  leaseAt: number[];
  otherNames: string[];
  problem?: Outcome;
}

async function watchClaim(ctx: CaseContext, run: WorkspaceRun): Promise<ClaimWatch> {
  const id = run.taskId('claimed');
  const ms = Math.round(run.leaseMs * 1.5);
  const rec = record(id, PHASES.sleep, { ms });
  const sent = await publishRecord(run.ws, 'pending', rec);
  const w: ClaimWatch = { id, claim: null, sent, changes: [], leaseAt: [], otherNames: [] };
  const name = await poll(() => run.observer.claims(id)[0] ?? null, finishWithin(run), 5);
  if (!name) {
    w.problem = fail(
      `the agent did not claim a ${PHASES.sleep} task within ${Math.round(finishWithin(run))} ms`,
      'a claim',
      await whereIs(run, id),
    );
    return w;
  }
  w.claim = name;
  const t0 = performance.now();
  w.claimedAt = t0;
  const path = run.ws.paths.dir('processing') + '/' + name;
  const epoch = Number(name.slice(id.length + 1, -'.tap.json'.length));
  const leasePath = run.ws.paths.sidecar(id, epoch, 'lease');
  let firstIno: number | null = null;
  let lastLease = '';
  const end = t0 + ms + run.scaled(10_000);
  while (performance.now() < end) {
    const [bytes, ino, lease] = await Promise.all([readOrNull(path), inodeOf(path), readOrNull(leasePath)]);
    if (bytes === null || ino === null) break;
    if (firstIno === null) firstIno = ino;
    if (!bytes.equals(sent) && !w.changes.includes(`bytes:${bytes.toString('utf8').slice(0, 200)}`))
      w.changes.push(`bytes:${bytes.toString('utf8').slice(0, 200)}`);
    if (ino !== firstIno && !w.changes.includes(`inode:${ino}`)) w.changes.push(`inode:${ino}`);
    const ls = lease?.toString('utf8') ?? '';
    if (ls !== '' && ls !== lastLease) {
      lastLease = ls;
      w.leaseAt.push(performance.now() - t0);
    }
    await new Promise((r) => setTimeout(r, 10));
  }
  w.otherNames = (run.observer.names('processing', `${id}@${epoch}.`) as string[]).filter((n) => n !== name);
  ctx.note(`claim ${name}: lease renewals seen at ${show(w.leaseAt.map(Math.round))} ms; other names of the claim: ${show(w.otherNames)}`);
  return w;
}

/** A sidecar or transition name of a claim: `<id>@<n>.<name>.json` (prepared records included) or `<id>@<n>.<nonce>.commit`. */
function isClaimFileName(name: string, prefix: string): boolean {
  if (!name.startsWith(prefix)) return false;
  const rest = name.slice(prefix.length);
  return /^[^/]+\.json$/.test(rest) || /^[^/.]+\.commit$/.test(rest);
}

export const claimCases = [
  wsCase({
    id: 'workspace.claim.untouched',
    title: 'The claimed file is never modified or replaced while the agent works; its other files are sidecars <id>@<n>.<name>.json',
    spec: 'bindings-workspace#claiming',
    requirements: ['TAP-WKS-011'],
    async run(ctx, run) {
      needPhases(run, PHASES.sleep);
      const w = await ctx.shared('workspace.claimed-sleep', () => watchClaim(ctx, run));
      if (w.problem) return w.problem;
      const odd = w.otherNames.filter((n) => !isClaimFileName(n, `${w.claim!.replace(/\.tap\.json$/, '')}.`) && !n.startsWith('.tmp-'));
      return verdictOf(
        `the claimed file kept its bytes and inode; sidecars ${show(w.otherNames)}`,
        check(
          w.changes.length === 0,
          `the claimed file ${w.claim} was modified or replaced while claimed (${w.changes[0]?.slice(0, 80)})`,
          'the claimed file as it was renamed from pending/',
          w.changes.join('; ').slice(0, 300),
        ),
        check(
          odd.length === 0,
          `the claim has files not named as sidecars: ${odd.join(', ')}`,
          `${w.claim!.replace(/\.tap\.json$/, '')}.<name>.json`,
          odd.join(', '),
        ),
      );
    },
  }),

  wsCase({
    id: 'workspace.lease.renewed',
    title: 'The claimant writes its lease right after the claim and renews it at least every lease_ms / 3',
    spec: 'bindings-workspace#leases',
    requirements: ['TAP-WKS-013'],
    async run(ctx, run) {
      needPhases(run, PHASES.sleep);
      const w = await ctx.shared('workspace.claimed-sleep', () => watchClaim(ctx, run));
      if (w.problem) return w.problem;
      const every = run.leaseMs / 3;
      const win = timingWindow(every, ctx.env.timeScale);
      if (w.leaseAt.length === 0)
        return fail(
          `no lease file ${w.claim!.replace(/\.tap\.json$/, '.lease.json')} appeared while the task was claimed`,
          'a lease sidecar',
          'none',
        );
      const first = w.leaseAt[0]!;
      if (first > win.latestMs)
        return fail(
          `the lease was first written ${Math.round(first)} ms after the claim`,
          `the lease within ${Math.round(win.latestMs)} ms`,
          `${Math.round(first)} ms`,
        );
      if (w.leaseAt.length < 2)
        return fail(
          `the lease was never renewed during a ${Math.round(run.leaseMs * 1.5)} ms phase`,
          `renewals every ${Math.round(every)} ms`,
          'one write',
        );
      const gaps = w.leaseAt.slice(1).map((t, i) => t - w.leaseAt[i]!);
      const widest = Math.max(...gaps);
      if (widest > win.latestMs)
        return fail(
          `${Math.round(widest)} ms passed between two renewals of the lease`,
          `a renewal at least every ${Math.round(every)} ms`,
          `a gap of ${Math.round(widest)} ms`,
        );
      if (widest > win.punctualMs)
        return {
          ...fail(`${Math.round(widest)} ms passed between two renewals; punctual is within ${Math.round(win.punctualMs)} ms`),
          verdict: 'NON-STRICT',
          timingOnly: true,
        };
      return pass(`${w.leaseAt.length} lease writes, at most ${Math.round(widest)} ms apart (lease_ms / 3 = ${Math.round(every)} ms)`);
    },
  }),
];
