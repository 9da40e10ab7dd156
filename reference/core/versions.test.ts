import { describe, expect, it } from 'vitest';
import { chooseVersion, compareVersions, isCompatibleProtocol, parseVersion, protocolOf, protocolVersion } from './versions.ts';

describe('versions', () => {
  it.each([
    [['1.1', '1.0'], ['1.0'], '1.0'],
    [['1.0'], ['1.0'], '1.0'],
    [['2.0'], ['1.0'], null],
    [['1.0', '1.2', '1.10'], ['1.2', '1.10', '1.0'], '1.10'],
    [['2.0', '1.1'], ['1.0', '1.1', '2.0'], '2.0'],
    [['1.0', 'x', '01.0'], ['1.0', '01.0'], '1.0'],
    [[], ['1.0'], null],
  ])('chooses the highest common version of %j and %j: %j (spec: handshake#version-negotiation)', (requested, supported, chosen) => {
    expect(chooseVersion(requested, supported)).toBe(chosen);
  });

  it('parses and compares versions numerically', () => {
    expect(parseVersion('1.10')).toEqual({ major: 1, minor: 10 });
    expect(parseVersion('1')).toBeNull();
    expect(parseVersion('1.01')).toBeNull();
    expect(compareVersions(parseVersion('1.10')!, parseVersion('1.9')!)).toBeGreaterThan(0);
  });

  it('reads and writes the envelope protocol (spec: envelope#protocol)', () => {
    expect(protocolVersion('tap/1.0')).toBe('1.0');
    expect(protocolVersion('TAP/1.0')).toBeNull();
    expect(protocolOf('1.0')).toBe('tap/1.0');
  });

  it('accepts a later minor of the negotiated major and refuses another major (spec: versioning#version-check)', () => {
    expect(isCompatibleProtocol('tap/1.0', '1.0')).toBe(true);
    expect(isCompatibleProtocol('tap/1.3', '1.0')).toBe(true);
    expect(isCompatibleProtocol('tap/2.0', '1.0')).toBe(false);
    expect(isCompatibleProtocol('tap/x', '1.0')).toBe(false);
  });
});
