/** Every scenario in the order of the issue, with the row ids each produces. */
import type { Budget } from '../lib/options.ts';
import type { Row } from '../lib/report.ts';
import { bridges, bridgesRowIds } from './bridges.ts';
import { decode } from './decode.ts';
import { harness, harnessRowIds } from './harness.ts';
import { nats, natsRowIds } from './nats.ts';
import { mesh, meshRowIds } from './mesh.ts';
import { registry, registryRowIds } from './registry.ts';
import { roundtrip, roundtripRowIds } from './roundtrip.ts';
import { scale, scaleRowIds } from './scale.ts';
import { startup, startupRowIds } from './startup.ts';
import { streaming, streamingRowIds } from './streaming.ts';
import { workspace, workspaceRowIds } from './workspace.ts';

/** A scenario: runs the selected rows within a budget, logging progress lines. */
export type Scenario = (budget: Budget, selected: (id: string) => boolean, log: (line: string) => void) => Promise<Row[]>;

export const SCENARIOS: ReadonlyArray<{ name: string; rows: string[]; run: Scenario }> = [
  { name: '0. Start-up', rows: startupRowIds(), run: startup },
  { name: '1. Task round trip', rows: roundtripRowIds(), run: roundtrip },
  { name: '2. Streaming', rows: streamingRowIds(), run: streaming },
  { name: '3. Decode + validate', rows: ['decode.per-message'], run: decode },
  { name: '4. Conformance harness', rows: harnessRowIds(), run: harness },
  { name: '5. Scale', rows: scaleRowIds(), run: scale },
  { name: '6. Workspace binding', rows: workspaceRowIds(), run: workspace },
  { name: '7. NATS binding', rows: natsRowIds(), run: nats },
  { name: '8. Mesh', rows: meshRowIds(), run: mesh },
  { name: '9. Registry', rows: registryRowIds(), run: registry },
  { name: '10. Bridges', rows: bridgesRowIds(), run: bridges },
];

/** Every row id a complete run produces. */
export const ALL_ROWS: readonly string[] = SCENARIOS.flatMap((s) => s.rows);
