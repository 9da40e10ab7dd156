/**
 * tap-conform from code: `runConformance({ target })` runs the suite against an agent (a stdio
 * command or a ws:// URL) and resolves with the same report model the CLI prints and writes.
 */
export { PROFILES } from './case.ts';
export type { Profile } from './case.ts';
export { Exit, listCases, runConformance, targetOf } from './run.ts';
export type { ConformanceOptions } from './run.ts';
export { blocksCertified, blocksStrict, notPerfect } from './report/model.ts';
export type { Report, ReportCase } from './report/model.ts';
export type { Verdict } from './verdict.ts';
export { CannotRun } from './target.ts';
export { renderBadge } from './report/badge.ts';
export { renderHtml } from './report/html.ts';
export { renderJson } from './report/json.ts';
export { renderJunit } from './report/junit.ts';
export { renderSummary } from './report/terminal.ts';
