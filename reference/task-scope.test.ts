/** A handler's task scope: kept only once a client or mesh exists, and a late one says what it misses. */
import { afterEach, describe, expect, it, vi } from 'vitest';
import type * as Scopes from './task-scope.ts';

/** A copy of the module of its own for each test, whatever the other files of this worker made (isolate: false). */
const fresh = async (n: number): Promise<typeof Scopes> => {
  const copy = `./task-scope.ts?copy=${n}`;
  return (await import(/* @vite-ignore */ copy)) as typeof Scopes;
};
const scope: Scopes.TaskScope = { agentId: 'a', delegation: ['a'], trace: { trace_id: 't' } };

afterEach(() => vi.restoreAllMocks());

describe('task scopes', () => {
  it('are not made while nothing in the process reads them: the handler runs, its scope is never built', async () => {
    const m = await fresh(1);
    const build = vi.fn(() => scope);
    const seen = await m.runInTaskScope(build, async () => {
      await Promise.resolve();
      return m.currentTaskScope();
    });
    expect(seen).toBeUndefined();
    expect(build).not.toHaveBeenCalled();
  });

  it('reach every await of a handler once a client or mesh exists, without a warning', async () => {
    const m = await fresh(2);
    const warn = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
    m.wantTaskScopes('a TAP client');
    const seen = await m.runInTaskScope(
      () => scope,
      async () => {
        await new Promise((r) => setTimeout(r, 1));
        return m.currentTaskScope();
      },
    );
    expect(seen).toBe(scope);
    expect(warn).not.toHaveBeenCalled();
  });

  it('say once, as a process warning with its code, that a client made while handlers ran cannot reach them; later tasks are scoped', async () => {
    const m = await fresh(3);
    const warn = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
    let release!: () => void;
    const running = m.runInTaskScope(
      () => scope,
      () => new Promise<void>((r) => (release = r)),
    );
    m.wantTaskScopes('a TAP client');
    m.wantTaskScopes('a mesh');
    expect(warn).toHaveBeenCalledTimes(1);
    const [message, options] = warn.mock.calls[0]! as [string, { code: string }];
    expect(message).toMatch(
      /^a TAP client was made while 1 task handler\(s\) of this process ran: .*delegation path.*Make clients and meshes before the agent takes tasks\.$/,
    );
    expect(options.code).toBe(m.LATE_SCOPE_WARNING);
    release();
    await running;
    expect(
      m.runInTaskScope(
        () => scope,
        () => m.currentTaskScope(),
      ),
    ).toBe(scope);
  });

  it('count a handler that ended, threw, returned at once or returned a broken thenable as no longer running: no warning after them', async () => {
    const m = await fresh(4);
    const warn = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
    m.runInTaskScope(
      () => scope,
      () => 1,
    );
    expect(() =>
      m.runInTaskScope(
        () => scope,
        () => {
          throw new Error('handler failed');
        },
      ),
    ).toThrow('handler failed');
    await m.runInTaskScope(
      () => scope,
      async () => 2,
    );
    await m
      .runInTaskScope(
        () => scope,
        () => Promise.reject(new Error('no')),
      )
      .catch(() => {});
    const broken = {
      then() {
        throw new Error('a thenable that throws');
      },
    };
    m.runInTaskScope(
      () => scope,
      () => broken,
    );
    await new Promise((r) => setTimeout(r, 0));
    m.wantTaskScopes('a mesh');
    expect(warn).not.toHaveBeenCalled();
  });
});
