/** An SVG badge (shields style, no external assets) showing the level reached. */
import { xmlEscape } from './junit.ts';
import { count, type Report } from './model.ts';

/** Approximate width of text in the badge font, in pixels. */
function textWidth(text: string): number {
  return Math.round([...text].reduce((w, ch) => w + (/[iljt.,:;|!' ]/.test(ch) ? 4 : /[mwMW]/.test(ch) ? 10 : 7), 0) + 10);
}

/**
 * The badge of a report: "TAP 1.0 | certified", "TAP 1.0 | certified, non-strict", "TAP 1.0 |
 * not certified", or "TAP 1.0 | partial" for a run that left cases out (never a certification).
 */
export function renderBadge(report: Report): string {
  const label = `TAP ${report.spec_version}`;
  const value = report.partial ? 'partial' : report.strict ? 'certified' : report.certified ? 'certified, non-strict' : 'not certified';
  const color = report.partial ? '#6b7280' : report.strict ? '#2e7d32' : report.certified ? '#9a8a2a' : '#c62828';
  const lw = textWidth(label);
  const vw = textWidth(value);
  const w = lw + vw;
  const title = `${report.level}: ${report.summary.PASS} of ${count(report.summary.total, 'case')} pass (tap-conform ${report.version})`;
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${w}" height="20" role="img" aria-label="${xmlEscape(`${label}: ${value}`)}">
  <title>${xmlEscape(title)}</title>
  <linearGradient id="s" x2="0" y2="100%"><stop offset="0" stop-color="#bbb" stop-opacity=".1"/><stop offset="1" stop-opacity=".1"/></linearGradient>
  <clipPath id="r"><rect width="${w}" height="20" rx="3" fill="#fff"/></clipPath>
  <g clip-path="url(#r)">
    <rect width="${lw}" height="20" fill="#555"/>
    <rect x="${lw}" width="${vw}" height="20" fill="${color}"/>
    <rect width="${w}" height="20" fill="url(#s)"/>
  </g>
  <g fill="#fff" text-anchor="middle" font-family="Verdana,Geneva,DejaVu Sans,sans-serif" font-size="11">
    <text x="${lw / 2}" y="14">${xmlEscape(label)}</text>
    <text x="${lw + vw / 2}" y="14">${xmlEscape(value)}</text>
  </g>
</svg>
`;
}
