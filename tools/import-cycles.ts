/** The import graph of one folder as data, and the circles in it (tools/import-graph.ts checks them). */

/** One relative import: from a module to a module, both as paths from the repository root. */
export interface Edge {
  from: string;
  to: string;
  typeOnly: boolean;
}

/** The parsed modules of one folder: each non-test module (by its path from the repository root) with its relative imports and its length. */
export interface Graph {
  folder: string;
  modules: Map<string, { edges: Edge[]; lines: number }>;
}

/** Every import circle: each set of modules that reach one another, with one loop through it to follow. */
export function findCycles(graph: Graph): { members: string[]; loop: string[] }[] {
  // Tarjan's strongly connected components; every component of two or more is a circle.
  let index = 0;
  const indices = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const components: string[][] = [];
  const strong = (v: string): void => {
    indices.set(v, index);
    low.set(v, index);
    index++;
    stack.push(v);
    onStack.add(v);
    for (const { to } of graph.modules.get(v)?.edges ?? []) {
      if (!graph.modules.has(to)) continue;
      if (!indices.has(to)) {
        strong(to);
        low.set(v, Math.min(low.get(v) as number, low.get(to) as number));
      } else if (onStack.has(to)) {
        low.set(v, Math.min(low.get(v) as number, indices.get(to) as number));
      }
    }
    if (low.get(v) === indices.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop() as string;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      const self = graph.modules.get(v)?.edges.some((e) => e.to === v);
      if (component.length > 1 || self) components.push(component.sort());
    }
  };
  for (const v of [...graph.modules.keys()].sort()) if (!indices.has(v)) strong(v);
  return components.map((members) => ({ members, loop: shortestLoop(graph, members) }));
}

/** One loop through a strongly connected component, as the path a reader can follow. */
function shortestLoop(graph: Graph, component: string[]): string[] {
  const members = new Set(component);
  const start = component[0] as string;
  const previous = new Map<string, string>();
  const queue = [start];
  while (queue.length > 0) {
    const v = queue.shift() as string;
    for (const { to } of graph.modules.get(v)?.edges ?? []) {
      if (!members.has(to)) continue;
      if (to === start) {
        const loop = [v];
        while (loop[0] !== start) loop.unshift(previous.get(loop[0] as string) as string);
        return loop;
      }
      if (!previous.has(to) && to !== start) {
        previous.set(to, v);
        queue.push(to);
      }
    }
  }
  return component;
}
