/** The core profile's cases, in report order: each file holds the cases of one spec anchor. */
import type { Case } from '../../case.ts';
import * as handshakeOverview from './handshake.overview.ts';
import * as handshakeAgentCard from './handshake.agent-card.ts';
import * as handshakeVersionNegotiation from './handshake.version-negotiation.ts';
import * as handshakeInit from './handshake.init.ts';
import * as envelopeSourceAndTarget from './envelope.source-and-target.ts';
import * as handshakeAck from './handshake.ack.ts';
import * as handshakeParams from './handshake.params.ts';
import * as handshakeReady from './handshake.ready.ts';
import * as handshakeBeforeGo from './handshake.before-go.ts';
import * as handshakeFailures from './handshake.failures.ts';
import * as handshakeLaterInit from './handshake.later-init.ts';
import * as integrityUnsignedErrors from './integrity.unsigned-errors.ts';
import * as limitsHeartbeats from './limits.heartbeats.ts';
import * as envelopeExtensibility from './envelope.extensibility.ts';
import * as envelopeDeadlineAndIdempotencyKey from './envelope.deadline-and-idempotency-key.ts';
import * as envelopeMetadata from './envelope.metadata.ts';
import * as envelopeProtocol from './envelope.protocol.ts';
import * as messagesDirection from './messages.direction.ts';
import * as messagesRequestsAndReplies from './messages.requests-and-replies.ts';
import * as messagesPayloadValidation from './messages.payload-validation.ts';
import * as envelopeFields from './envelope.fields.ts';
import * as securitySecrets from './security.secrets.ts';
import * as errorsCorrelation from './errors.correlation.ts';
import * as errorsNoRepliesToErrors from './errors.no-replies-to-errors.ts';
import * as errorsRegistry from './errors.registry.ts';
import * as errorsErrorPayload from './errors.error-payload.ts';
import * as errorsDetails from './errors.details.ts';
import * as errorsFatalErrors from './errors.fatal-errors.ts';
import * as tasksAcceptance from './tasks.acceptance.ts';
import * as errorsOrderOfChecks from './errors.order-of-checks.ts';
import * as envelopeEncoding from './envelope.encoding.ts';
import * as errorsRobustness from './errors.robustness.ts';
import * as tasksStatus from './tasks.status.ts';
import * as errorsErrorTarget from './errors.error-target.ts';
import * as integrityVerification from './integrity.verification.ts';
import * as limitsMessageSize from './limits.message-size.ts';
import * as limitsRepeatedBadInput from './limits.repeated-bad-input.ts';
import * as versioningVersionCheck from './versioning.version-check.ts';
import * as versioningStrayMinor from './versioning.stray-minor.ts';
import * as versioningTap11 from './versioning.tap-1-1.ts';
import * as tasksListing from './tasks.listing.ts';
import * as errorsCapabilityFailed from './errors.capability-failed.ts';
import * as versioningReservedNames from './versioning.reserved-names.ts';
import * as limitsNesting from './limits.nesting.ts';
import * as limitsPreHandshake from './limits.pre-handshake.ts';
import * as limitsTableLimits from './limits.table-limits.ts';
import * as limitsSources from './limits.sources.ts';
import * as conformanceTargets from './conformance.targets.ts';
import * as handshakeTimeouts from './handshake.timeouts.ts';
import * as handshakeNegotiatedExtensions from './handshake.negotiated-extensions.ts';
import * as envelopeTraceContext from './envelope.trace-context.ts';
import * as meshDelegation from './mesh.delegation.ts';

export const coreCases: readonly Case[] = [
  handshakeOverview,
  handshakeAgentCard,
  handshakeVersionNegotiation,
  handshakeInit,
  envelopeSourceAndTarget,
  handshakeAck,
  handshakeParams,
  handshakeReady,
  handshakeBeforeGo,
  handshakeFailures,
  handshakeLaterInit,
  integrityUnsignedErrors,
  limitsHeartbeats,
  envelopeExtensibility,
  envelopeDeadlineAndIdempotencyKey,
  envelopeMetadata,
  envelopeProtocol,
  messagesDirection,
  messagesRequestsAndReplies,
  messagesPayloadValidation,
  envelopeFields,
  securitySecrets,
  errorsCorrelation,
  errorsNoRepliesToErrors,
  errorsRegistry,
  errorsErrorPayload,
  errorsDetails,
  errorsFatalErrors,
  tasksAcceptance,
  errorsOrderOfChecks,
  envelopeEncoding,
  errorsRobustness,
  tasksStatus,
  errorsErrorTarget,
  integrityVerification,
  limitsMessageSize,
  limitsRepeatedBadInput,
  versioningVersionCheck,
  versioningStrayMinor,
  versioningTap11,
  tasksListing,
  errorsCapabilityFailed,
  versioningReservedNames,
  limitsNesting,
  limitsPreHandshake,
  limitsTableLimits,
  limitsSources,

  conformanceTargets,
  handshakeTimeouts,
  handshakeNegotiatedExtensions,
  envelopeTraceContext,
  meshDelegation,
].flatMap((file) => file.cases);
