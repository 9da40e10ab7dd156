import { describe, expect, it } from 'vitest';
import { compareVersions, parseRange, parseVersion, satisfies } from './semver.ts';

const cmp = (a: string, b: string): number => Math.sign(compareVersions(parseVersion(a)!, parseVersion(b)!));

describe('SemVer precedence (spec: registry#version-ranges, TAP-REG-034)', () => {
  it('orders releases by major, minor and patch as numbers', () => {
    expect(cmp('1.10.0', '1.9.9')).toBe(1);
    expect(cmp('2.0.0', '10.0.0')).toBe(-1);
    expect(cmp('1.2.3', '1.2.3+build.7')).toBe(0);
  });

  it('puts a pre-release below its release and orders pre-release identifiers as SemVer 2.0.0 says', () => {
    const order = [
      '1.0.0-alpha',
      '1.0.0-alpha.1',
      '1.0.0-alpha.beta',
      '1.0.0-beta',
      '1.0.0-beta.2',
      '1.0.0-beta.11',
      '1.0.0-rc.1',
      '1.0.0',
    ];
    for (let i = 1; i < order.length; i++) expect(cmp(order[i - 1]!, order[i]!), `${order[i - 1]} < ${order[i]}`).toBe(-1);
  });

  it('reads no version with leading zeros, missing parts or empty identifiers', () => {
    for (const bad of ['1.2', '01.2.3', '1.2.3-01', '1.2.3-', 'v1.2.3', '1.2.3-a..b']) expect(parseVersion(bad), bad).toBeUndefined();
  });
});

describe('version ranges (spec: registry#version-ranges)', () => {
  const cases: Array<[string, string[], string[]]> = [
    ['^1.2.3', ['1.2.3', '1.9.0', '1.99.99'], ['1.2.2', '2.0.0', '2.0.0-rc.1']],
    ['^0.2.3', ['0.2.3', '0.2.9'], ['0.3.0', '0.2.2']],
    ['^0.0.3', ['0.0.3'], ['0.0.4', '0.0.2']],
    ['^1.2', ['1.2.0', '1.5.1'], ['1.1.9', '2.0.0']],
    ['~1.2.3', ['1.2.3', '1.2.9'], ['1.3.0', '1.2.2']],
    ['~1', ['1.0.0', '1.9.9'], ['2.0.0']],
    ['1.x', ['1.0.0', '1.7.3'], ['2.0.0', '0.9.0']],
    ['1.2.*', ['1.2.0', '1.2.8'], ['1.3.0']],
    ['1', ['1.4.0'], ['2.0.0']],
    ['=1.2.3', ['1.2.3'], ['1.2.4']],
    ['>=1.2.0 <1.4.0', ['1.2.0', '1.3.9'], ['1.4.0', '1.1.0']],
    ['> 1.2', ['1.3.0'], ['1.2.9']],
    ['<=1.2', ['1.2.9', '0.1.0'], ['1.3.0']],
    ['1.0.0 - 1.2', ['1.0.0', '1.2.7'], ['1.3.0', '0.9.0']],
    ['1.0.0 - 1.2.0', ['1.2.0'], ['1.2.1']],
    ['<1.0.0 || >=3.0.0', ['0.5.0', '3.1.0'], ['1.0.0', '2.9.9']],
    ['*', ['0.0.1', '9.9.9-beta'], []],
    ['', ['1.0.0'], []],
  ];
  for (const [range, yes, no] of cases) {
    it(`"${range}" holds for ${yes.join(', ')}${no.length ? ` and not for ${no.join(', ')}` : ''}`, () => {
      for (const v of yes) expect(satisfies(v, range), `${v} in ${range}`).toBe(true);
      for (const v of no) expect(satisfies(v, range), `${v} not in ${range}`).toBe(false);
    });
  }

  it('lets a version outside SemVer satisfy only the ranges meaning any version (TAP-REG-035)', () => {
    expect(satisfies('2024-06', '*')).toBe(true);
    expect(satisfies('2024-06', '')).toBe(true);
    expect(satisfies('2024-06', '>=1.0.0')).toBe(false);
    expect(satisfies('v2', '2')).toBe(false);
  });

  it('refuses an unreadable range, naming the part it could not read (TAP-REG-036)', () => {
    expect(() => parseRange('>=1.2.3 <<2')).toThrow(/cannot read "<2"|"<<2"/);
    expect(() => parseRange('1.x.3')).toThrow(/number after a wildcard/);
    expect(() => parseRange('latest')).toThrow(/"latest"/);
  });
});
