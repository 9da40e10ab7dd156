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

interface Outcome {
  value: unknown;
  threw: boolean;
}

/** Runs `fn` as a handler and resolves with the outcome runHandler passed on; `calls` counts how often it did. */
function outcomeOf(m: typeof Scopes, build: () => Scopes.TaskScope, fn: () => unknown, calls: Outcome[] = []): Promise<Outcome> {
  return new Promise((resolve) =>
    m.runHandler(build, fn, (value, threw) => {
      calls.push({ value, threw });
      resolve({ value, threw });
    }),
  );
}

describe('task scopes', () => {
  it('are not made while nothing in the process reads them: the handler runs, its scope is never built', async () => {
    const m = await fresh(1);
    const build = vi.fn(() => scope);
    const seen = await outcomeOf(m, build, async () => {
      await Promise.resolve();
      return m.currentTaskScope();
    });
    expect(seen).toEqual({ value: undefined, threw: false });
    expect(build).not.toHaveBeenCalled();
  });

  it('reach every await of a handler once a client or mesh exists, without a warning', async () => {
    const m = await fresh(2);
    const warn = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
    m.wantTaskScopes('a TAP client');
    const seen = await outcomeOf(
      m,
      () => scope,
      async () => {
        await new Promise((r) => setTimeout(r, 1));
        return m.currentTaskScope();
      },
    );
    expect(seen.value).toBe(scope);
    expect(warn).not.toHaveBeenCalled();
  });

  it('say once, as a process warning with its code, that a client made while handlers ran cannot reach them; later tasks are scoped', async () => {
    const m = await fresh(3);
    const warn = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
    let release!: () => void;
    const running = outcomeOf(
      m,
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
      (
        await outcomeOf(
          m,
          () => scope,
          () => m.currentTaskScope(),
        )
      ).value,
    ).toBe(scope);
  });

  it('pass on each outcome once — returned at once, thrown, async, rejected, a thenable that throws or calls back twice — and count none as still running', async () => {
    const m = await fresh(4);
    const warn = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
    // A value that is no thenable, or a throw, settles within the call.
    const now: Outcome[] = [];
    void outcomeOf(
      m,
      () => scope,
      () => 1,
      now,
    );
    const failure = new Error('handler failed');
    void outcomeOf(
      m,
      () => scope,
      () => {
        throw failure;
      },
      now,
    );
    expect(now).toEqual([
      { value: 1, threw: false },
      { value: failure, threw: true },
    ]);
    expect(
      await outcomeOf(
        m,
        () => scope,
        async () => 2,
      ),
    ).toEqual({ value: 2, threw: false });
    const no = new Error('no');
    expect(
      await outcomeOf(
        m,
        () => scope,
        () => Promise.reject(no),
      ),
    ).toEqual({ value: no, threw: true });
    const thrown = new Error('a thenable that throws');
    const broken = {
      then() {
        throw thrown;
      },
    };
    expect(
      await outcomeOf(
        m,
        () => scope,
        () => broken,
      ),
    ).toEqual({ value: thrown, threw: true });
    const twice = {
      then(resolve: (v: unknown) => void, reject: (e: unknown) => void) {
        resolve(3);
        reject(new Error('again'));
        resolve(4);
      },
    };
    const calls: Outcome[] = [];
    expect(
      await outcomeOf(
        m,
        () => scope,
        () => twice,
        calls,
      ),
    ).toEqual({ value: 3, threw: false });
    await new Promise((r) => setTimeout(r, 0));
    expect(calls).toHaveLength(1);
    m.wantTaskScopes('a mesh');
    expect(warn).not.toHaveBeenCalled();
  });
});
