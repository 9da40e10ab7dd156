/** The registry profile's cases, in report order: each file holds the cases of one spec anchor. */
import type { Case } from '../../case.ts';
import * as registryEntry from './registry.entry.ts';
import * as registryInstances from './registry.instances.ts';
import * as registryHeartbeats from './registry.heartbeats.ts';
import * as registryLoad from './registry.load.ts';
import * as meshTrace from './mesh.trace.ts';
import * as registrySignatures from './registry.signatures.ts';
import * as registryWithdrawal from './registry.withdrawal.ts';

export const registryCases: readonly Case[] = [
  registryEntry,
  registryInstances,
  registryHeartbeats,
  registryLoad,
  meshTrace,
  registrySignatures,
  registryWithdrawal,
].flatMap((file) => file.cases);
