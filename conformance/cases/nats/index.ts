/** The nats profile's cases, in report order: each file holds the cases of one spec anchor. */
import type { Case } from '../../case.ts';
import * as bindingsNatsOpening from './bindings-nats.opening.ts';
import * as bindingsNatsMessageSize from './bindings-nats.message-size.ts';
import * as bindingsNatsFrames from './bindings-nats.frames.ts';
import * as bindingsNatsLiveness from './bindings-nats.liveness.ts';
import * as bindingsNatsClosing from './bindings-nats.closing.ts';

export const natsCases: readonly Case[] = [
  bindingsNatsOpening,
  bindingsNatsMessageSize,
  bindingsNatsFrames,
  bindingsNatsLiveness,
  bindingsNatsClosing,
].flatMap((file) => file.cases);
