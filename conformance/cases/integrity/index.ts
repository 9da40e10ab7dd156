/** The integrity profile's cases, in report order: each file holds the cases of one spec anchor. */
import type { Case } from '../../case.ts';
import * as integrityNegotiation from './integrity.negotiation.ts';
import * as integrityVerification from './integrity.verification.ts';
import * as integritySigning from './integrity.signing.ts';
import * as integritySessionBinding from './integrity.session-binding.ts';
import * as integritySkew from './integrity.skew.ts';
import * as integrityKeys from './integrity.keys.ts';
import * as integrityIdentity from './integrity.identity.ts';
import * as errorsOrderOfChecks from './errors.order-of-checks.ts';
import * as conformanceTargets from './conformance.targets.ts';
import * as bindingsNatsForgedFrames from './bindings-nats.forged-frames.ts';

export const integrityCases: readonly Case[] = [
  integrityNegotiation,
  integrityVerification,
  integritySigning,
  integritySessionBinding,
  integritySkew,
  integrityKeys,
  integrityIdentity,
  errorsOrderOfChecks,
  conformanceTargets,
  bindingsNatsForgedFrames,
].flatMap((file) => file.cases);
