/** The websocket profile's cases, in report order: each file holds the cases of one spec anchor. */
import type { Case } from '../../case.ts';
import * as bindingsWebsocketOpening from './bindings-websocket.opening.ts';
import * as bindingsWebsocketFrames from './bindings-websocket.frames.ts';
import * as bindingsWebsocketMessageSize from './bindings-websocket.message-size.ts';
import * as bindingsWebsocketCloseCodes from './bindings-websocket.close-codes.ts';
import * as bindingsWebsocketOneSession from './bindings-websocket.one-session.ts';

export const websocketCases: readonly Case[] = [
  bindingsWebsocketOpening,
  bindingsWebsocketFrames,
  bindingsWebsocketMessageSize,
  bindingsWebsocketCloseCodes,
  bindingsWebsocketOneSession,
].flatMap((file) => file.cases);
