import { describe, expect, it } from 'vitest';
import { type ExpositionError, parseExposition, sampleValue } from './exposition-parse.ts';
import { Counter, Histogram, mergeFamilies, renderExposition, type Family } from './prometheus.ts';

describe('the Prometheus text format', () => {
  it('writes HELP and TYPE lines, escaped help and label values, and reads them back', () => {
    const counter = new Counter();
    counter.inc({ code: 'BUSY' });
    counter.inc({ code: 'BUSY' }, 2);
    counter.inc({ code: 'a "quoted"\\back\nline' });
    const text = renderExposition([
      { name: 'tap_refused_total', help: 'Refusals\\by code\nper agent.', type: 'counter', samples: counter.samples() },
      { name: 'tap_up', help: 'Up.', type: 'gauge', samples: [{ value: 1 }, { labels: { x: 'y' }, value: Number.POSITIVE_INFINITY }] },
    ]);
    expect(text).toContain('# HELP tap_refused_total Refusals\\\\by code\\nper agent.\n# TYPE tap_refused_total counter\n');
    expect(text).toContain('tap_refused_total{code="a \\"quoted\\"\\\\back\\nline"} 1\n');
    expect(text).toContain('tap_up{x="y"} +Inf\n');
    const families = parseExposition(text);
    expect(families.get('tap_refused_total')).toMatchObject({ type: 'counter', help: 'Refusals\\by code\nper agent.' });
    expect(sampleValue(families, 'tap_refused_total', { code: 'BUSY' })).toBe(3);
    expect(sampleValue(families, 'tap_refused_total', { code: 'a "quoted"\\back\nline' })).toBe(1);
    expect(sampleValue(families, 'tap_up', { x: 'y' })).toBe(Number.POSITIVE_INFINITY);
  });

  it('writes a histogram as cumulative buckets ending in +Inf, with _sum and _count per series', () => {
    const h = new Histogram([0.1, 1, 10]);
    for (const v of [0.05, 0.5, 0.7, 5, 50]) h.observe(v, { capability: 'a' });
    h.observe(0.2, { capability: 'b' });
    const text = renderExposition([{ name: 'tap_d_seconds', help: 'Durations.', type: 'histogram', series: h.snapshot() }]);
    expect(text).toContain(
      [
        'tap_d_seconds_bucket{capability="a",le="0.1"} 1',
        'tap_d_seconds_bucket{capability="a",le="1"} 3',
        'tap_d_seconds_bucket{capability="a",le="10"} 4',
        'tap_d_seconds_bucket{capability="a",le="+Inf"} 5',
        'tap_d_seconds_sum{capability="a"} 56.25',
        'tap_d_seconds_count{capability="a"} 5',
      ].join('\n'),
    );
    const families = parseExposition(text);
    expect(families.get('tap_d_seconds')!.samples).toHaveLength(12);
    expect(sampleValue(families, 'tap_d_seconds_count', { capability: 'b' })).toBe(1);
  });

  it('joins families of one name from several sources into one, so each name has one HELP and TYPE', () => {
    const part = (capability: string): Family => ({
      name: 'tap_q',
      help: 'Q.',
      type: 'gauge',
      samples: [{ labels: { capability }, value: 1 }],
    });
    const text = renderExposition(mergeFamilies([part('a'), part('b')]));
    expect(text.match(/# TYPE tap_q/g)).toHaveLength(1);
    expect(sampleValue(parseExposition(text), 'tap_q')).toBe(2);
    expect(() => mergeFamilies([part('a'), { name: 'tap_q', help: 'Q.', type: 'counter', samples: [] }])).toThrow(/gauge and as a counter/);
  });

  it('counts the same through a kept series as through labels given each time, a value beyond every bound (or NaN) in the last bucket', () => {
    const byLabels = new Histogram([1, 2]);
    const kept = new Histogram([1, 2]);
    const series = kept.seriesOf({ capability: 'a.b' });
    for (const v of [0.5, 1, 1.5, 2, 3, Number.NaN]) {
      byLabels.observe(v, { capability: 'a.b' });
      kept.observeIn(series, v);
    }
    expect(kept.snapshot()).toEqual(byLabels.snapshot());
    expect(kept.snapshot()[0]!.counts).toEqual([2, 2, 2]);
    const counter = new Counter();
    counter.inc({ code: 'BUSY' }, 0);
    counter.seriesOf({ code: 'BUSY' }).value += 2;
    counter.inc({ code: 'BUSY' });
    expect(counter.samples()).toEqual([{ labels: { code: 'BUSY' }, value: 3 }]);
  });

  it('refuses names the format does not allow', () => {
    expect(() => renderExposition([{ name: 'tap-bad', help: '', type: 'gauge', samples: [] }])).toThrow(/not a metric name/);
    expect(() =>
      renderExposition([{ name: 'tap_ok', help: '', type: 'gauge', samples: [{ labels: { 'bad-label': 'x' }, value: 1 }] }]),
    ).toThrow(/not a label name/);
  });

  it('reading names the first line that is not the format', () => {
    const bad = (text: string) => {
      try {
        parseExposition(text);
      } catch (err) {
        return err as ExpositionError;
      }
      throw new Error('parsed');
    };
    expect(bad('# TYPE a counter\na 1\nb{x="1} 2\n').line).toBe(3);
    expect(bad('a one\n').message).toMatch(/line 1: "one" is not a number/);
    expect(bad('a 1\n# TYPE a counter\n').message).toMatch(/comes after its samples/);
    expect(bad('a{x="\\t"} 1\n').message).toMatch(/escape/);
    expect(bad('# TYPE h histogram\nh_bucket{le="1"} 1\nh_count 1\n').message).toMatch(/no \+Inf bucket/);
    expect(bad('# TYPE h histogram\nh_bucket{le="1"} 2\nh_bucket{le="+Inf"} 1\nh_count 1\n').message).toMatch(/cumulative/);
    expect(bad('# TYPE h histogram\nh_bucket{le="+Inf"} 2\nh_count 1\n').message).toMatch(/_count/);
  });
});
