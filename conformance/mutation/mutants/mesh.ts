/** Mutants that break the rules TAP 1.1 adds to spec/1.1/mesh.md: delegation paths (spec: mesh#delegation). */
import { type Msg } from '../layer.ts';
import { errorOf, out, payload, refuse } from '../operators.ts';
import { repairIn, type Row } from '../rows.ts';

/** A task.request that carries a delegation path. */
const delegated = (m: Msg): boolean => m.type === 'task.request' && Array.isArray(m.payload?.delegation) && m.payload.delegation.length > 0;

/** The request without its path: the agent sees a task sent on its own behalf. */
const withoutPath = (m: Msg): Msg => {
  const { delegation: _, ...rest } = m.payload ?? {};
  return { ...m, payload: rest };
};

export const rows: Row[] = [
  [
    'TAP-MESH-153:loop-accepted',
    "a task whose delegation lists the agent's own id is accepted",
    repairIn((m, v) => delegated(m) && v.version === '1.1' && (m.payload!.delegation as unknown[]).length <= 8, withoutPath),
  ],
  [
    'TAP-MESH-154:depth-ignored',
    'a task whose delegation is longer than the limit is accepted',
    repairIn((m, v) => delegated(m) && v.version === '1.1' && (m.payload!.delegation as unknown[]).length > 8, withoutPath),
  ],
  [
    'TAP-MESH-155:no-path',
    'a DELEGATION_LOOP refusal carries no details',
    () =>
      out(
        errorOf('DELEGATION_LOOP'),
        payload((p) => ({ ...p, details: {} })),
      ),
  ],
  [
    'TAP-MESH-156:refused-in-1-0',
    'in a session of 1.0 a task.request with a delegation path is refused DELEGATION_LOOP',
    () => refuse((m, v) => delegated(m) && v.version === '1.0', 'DELEGATION_LOOP'),
  ],
];
