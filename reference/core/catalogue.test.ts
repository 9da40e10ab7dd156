import { describe, expect, it } from 'vitest';
import { PAYLOADS } from '../../schemas/src/index.ts';
import {
  allowedBeforeHandshake,
  isAgentToRequester,
  isKnownType,
  isRequesterToAgent,
  isSequenced,
  MESSAGE_CATALOGUE,
  mayReceive,
  messageEntry,
  PROTOCOL,
  replyTypes,
  SUPPORTED_VERSIONS,
} from './catalogue.ts';

describe('catalogue', () => {
  it('speaks tap/1.0 (spec: envelope#protocol)', () => {
    expect(PROTOCOL).toBe('tap/1.0');
    expect(SUPPORTED_VERSIONS).toEqual(['1.1', '1.0']);
  });

  it('has one entry per message type the schemas define (spec: messages#catalogue)', () => {
    expect(MESSAGE_CATALOGUE.map((m) => m.type).sort()).toEqual(Object.keys(PAYLOADS).sort());
    expect(messageEntry('task.request')?.replies).toEqual(['task.accepted', 'task.snapshot', 'error']);
    expect(messageEntry('task.unknown')).toBeUndefined();
    expect(isKnownType('task.unknown')).toBe(false);
  });

  it('tells the direction of each type; ping, pong, error and farewell flow both ways (spec: messages#direction)', () => {
    expect(isRequesterToAgent('task.request')).toBe(true);
    expect(isAgentToRequester('task.request')).toBe(false);
    expect(isAgentToRequester('task.result')).toBe(true);
    expect(isRequesterToAgent('task.result')).toBe(false);
    for (const t of ['ping', 'pong', 'error', 'session.farewell']) {
      expect(mayReceive('agent', t)).toBe(true);
      expect(mayReceive('requester', t)).toBe(true);
    }
    expect(mayReceive('agent', 'nope')).toBe(false);
  });

  it('lets only handshake messages, ping, pong and error flow before go (spec: handshake#before-go)', () => {
    const early = MESSAGE_CATALOGUE.filter((m) => allowedBeforeHandshake(m.type))
      .map((m) => m.type)
      .sort();
    expect(early).toEqual(['error', 'handshake.ack', 'handshake.go', 'handshake.init', 'handshake.ready', 'ping', 'pong']);
  });

  it('sequences exactly the stream messages of a task (spec: tasks#sequences)', () => {
    const sequenced = MESSAGE_CATALOGUE.filter((m) => isSequenced(m.type))
      .map((m) => m.type)
      .sort();
    expect(sequenced).toEqual(['input.request', 'plan.submit', 'task.accepted', 'task.event', 'task.handoff', 'task.result']);
    expect(replyTypes('ping')).toEqual(['pong']);
    expect(replyTypes('nope')).toEqual([]);
  });
});
