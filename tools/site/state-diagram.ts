/**
 * The task state diagram, drawn as SVG from task-states.json with a deterministic layout
 * (spec: tasks#states). Non-terminal states stand in a column, ranked by their longest path
 * from the initial state; terminal states stand in a row below. Arrows between neighbouring
 * ranks are straight; an arrow that skips ranks bends around the column; an arrow into a
 * terminal state leaves its source sideways and drops into its own port on the target's top
 * edge. Each arrow carries the number of its transition, and the legend (same numbers) gives
 * the trigger, which is also each arrow's tooltip.
 */
import { esc } from './html.ts';
import type { StateTable } from './sources.ts';

export interface Box {
  state: string;
  x: number;
  y: number;
  w: number;
  h: number;
  terminal: boolean;
  initial: boolean;
}

export interface Edge {
  /** 1-based number: the transition's position in task-states.json. */
  n: number;
  from: string;
  to: string;
  trigger: string;
  /** SVG path data. */
  d: string;
  /** Where the number is drawn. */
  label: { x: number; y: number };
}

export interface Layout {
  width: number;
  height: number;
  boxes: Box[];
  edges: Edge[];
  /** The initial marker: a dot and a short arrow into the initial state. */
  start: { x: number; y: number };
}

const NODE_H = 40;
const ROW_GAP = 84;
const CHAR_W = 7.4;
const PORT_GAP = 16;
const SIDE_GAP = 44;
const LABEL_R = 9;

type Point = { x: number; y: number };

/** Longest-path ranks of the non-terminal states from the initial one, ignoring back edges. */
export function ranks(table: StateTable): Map<string, number> {
  const terminal = new Set(table.terminal);
  const chain = table.states.filter((s) => !terminal.has(s));
  const out = new Map<string, string[]>();
  for (const t of table.transitions) if (!terminal.has(t.to) && !terminal.has(t.from)) out.set(t.from, [...(out.get(t.from) ?? []), t.to]);
  // Back edges: edges into a state still on the DFS stack.
  const back = new Set<string>();
  const state = new Map<string, 'open' | 'done'>();
  const visit = (s: string) => {
    state.set(s, 'open');
    for (const next of out.get(s) ?? []) {
      if (state.get(next) === 'open') back.add(`${s}>${next}`);
      else if (!state.has(next)) visit(next);
    }
    state.set(s, 'done');
  };
  visit(table.initial);
  for (const s of chain) if (!state.has(s)) visit(s);
  const rank = new Map<string, number>(chain.map((s) => [s, 0]));
  // Relax in a fixed order until nothing changes (the graph without back edges is acyclic).
  for (let changed = true; changed; ) {
    changed = false;
    for (const t of table.transitions) {
      if (terminal.has(t.to) || terminal.has(t.from) || back.has(`${t.from}>${t.to}`)) continue;
      const r = rank.get(t.from)! + 1;
      if (r > rank.get(t.to)!) {
        rank.set(t.to, r);
        changed = true;
      }
    }
  }
  return rank;
}

/** Computes the whole layout; the same table always gives the same drawing. */
export function layout(table: StateTable): Layout {
  const terminal = new Set(table.terminal);
  const chain = table.states.filter((s) => !terminal.has(s));
  const rank = ranks(table);
  const width = (s: string) => Math.round(s.length * CHAR_W + 32);
  const chainW = Math.max(...chain.map(width));
  const maxRank = Math.max(0, ...rank.values());
  const top = 56;

  // Rows of the column: states of one rank side by side, centred.
  const boxes = new Map<string, Box>();
  const rows = new Map<number, string[]>();
  for (const s of chain) rows.set(rank.get(s)!, [...(rows.get(rank.get(s)!) ?? []), s]);

  // Incoming terminal edges per terminal state, to size its box and ports.
  const incoming = new Map<string, typeof table.transitions>();
  for (const t of table.transitions) if (terminal.has(t.to)) incoming.set(t.to, [...(incoming.get(t.to) ?? []), t]);
  const termW = (s: string) => Math.max(width(s), ((incoming.get(s)?.length ?? 0) + 1) * PORT_GAP);

  // Terminal row: first half to the left of the column, the rest to the right.
  const terms = table.terminal;
  const leftTerms = terms.slice(0, Math.floor(terms.length / 2));
  const rightTerms = terms.slice(leftTerms.length);
  const rowWidth = (list: string[]) => list.reduce((a, s) => a + termW(s), 0) + Math.max(0, list.length - 1) * 24;
  const sideSpan = Math.max(rowWidth(leftTerms), rowWidth(rightTerms));
  const margin = 40;
  const cx = margin + sideSpan + SIDE_GAP + chainW / 2;
  const totalW = Math.round(cx * 2);

  for (const [r, states] of rows) {
    const w0 = (s: string) => (states.length === 1 ? chainW : width(s));
    const rowW = states.reduce((a, s) => a + w0(s), 0) + (states.length - 1) * 24;
    let x = cx - rowW / 2;
    for (const s of states) {
      const w = w0(s);
      boxes.set(s, { state: s, x, y: top + r * (NODE_H + ROW_GAP), w, h: NODE_H, terminal: false, initial: s === table.initial });
      x += w + 24;
    }
  }
  const termY = top + (maxRank + 1) * (NODE_H + ROW_GAP) + 40;
  let lx = cx - chainW / 2 - SIDE_GAP;
  for (const s of [...leftTerms].reverse()) {
    const w = termW(s);
    boxes.set(s, { state: s, x: lx - w, y: termY, w, h: NODE_H, terminal: true, initial: false });
    lx -= w + 24;
  }
  let rx = cx + chainW / 2 + SIDE_GAP;
  for (const s of rightTerms) {
    const w = termW(s);
    boxes.set(s, { state: s, x: rx, y: termY, w, h: NODE_H, terminal: true, initial: false });
    rx += w + 24;
  }

  const center = (b: Box): Point => ({ x: b.x + b.w / 2, y: b.y + b.h / 2 });
  const paths = new Map<number, { d: string; points: Point[] }>();

  // Ports: on each terminal's top edge, the edge from the highest source takes the outermost port.
  const port = new Map<number, number>();
  for (const [s, list] of incoming) {
    const b = boxes.get(s)!;
    const left = center(b).x < cx;
    const sorted = [...list].sort(
      (a, c) => boxes.get(a.from)!.y - boxes.get(c.from)!.y || table.transitions.indexOf(a) - table.transitions.indexOf(c),
    );
    const step = b.w / (list.length + 1);
    sorted.forEach((t, i) => {
      const k = left ? i + 1 : list.length - i;
      port.set(table.transitions.indexOf(t), b.x + k * step);
    });
  }
  // Side slots: edges leaving one side of a source, outermost port highest.
  const slot = new Map<number, number>();
  const sides = new Map<string, number[]>();
  table.transitions.forEach((t, i) => {
    if (!terminal.has(t.to)) return;
    const side = port.get(i)! < center(boxes.get(t.from)!).x ? 'L' : 'R';
    const key = `${t.from}:${side}`;
    sides.set(key, [...(sides.get(key) ?? []), i]);
  });
  for (const list of sides.values()) {
    list.sort((a, c) => Math.abs(port.get(c)! - cx) - Math.abs(port.get(a)! - cx) || a - c);
    list.forEach((i, k) => slot.set(i, (k - (list.length - 1) / 2) * 9));
  }

  // Skip edges within the column bend around it on the right, back edges on the left, each a little further out.
  let rightBend = 0;
  let leftBend = 0;
  table.transitions.forEach((t, i) => {
    const a = boxes.get(t.from)!;
    const b = boxes.get(t.to)!;
    const ca = center(a);
    const cb = center(b);
    const r = 8;
    if (b.terminal) {
      const px = port.get(i)!;
      const left = px < ca.x;
      const sx = left ? a.x : a.x + a.w;
      const sy = ca.y + slot.get(i)!;
      const dir = left ? -1 : 1;
      const d = `M ${sx} ${sy} H ${px - dir * r} Q ${px} ${sy} ${px} ${sy + r} V ${b.y}`;
      paths.set(i, {
        d,
        points: [
          { x: sx, y: sy },
          { x: px, y: sy },
          { x: px, y: b.y },
        ],
      });
      return;
    }
    const ra = rank.get(t.from)!;
    const rb = rank.get(t.to)!;
    const reverse = table.transitions.some((u) => u.from === t.to && u.to === t.from);
    if (Math.abs(rb - ra) === 1 && Math.abs(ca.x - cb.x) < 1) {
      // Neighbouring ranks: straight, side by side when the pair goes both ways.
      const off = reverse ? (rb > ra ? -12 : 12) : 0;
      const y1 = rb > ra ? a.y + a.h : a.y;
      const y2 = rb > ra ? b.y : b.y + b.h;
      paths.set(i, {
        d: `M ${ca.x + off} ${y1} V ${y2}`,
        points: [
          { x: ca.x + off, y: y1 },
          { x: ca.x + off, y: y2 },
        ],
      });
      return;
    }
    const onRight = rb > ra;
    const bend = onRight ? 40 + 18 * rightBend++ : 40 + 18 * leftBend++;
    // Leave from the bottom (top) edge near the corner and enter the top (bottom) edge near the corner, bowing out sideways.
    const down = cb.y > ca.y;
    const x1 = onRight ? a.x + a.w - 14 : a.x + 14;
    const x2 = onRight ? b.x + b.w - 14 : b.x + 14;
    const y1 = down ? a.y + a.h : a.y;
    const y2 = down ? b.y : b.y + b.h;
    const out1 = onRight ? Math.max(a.x + a.w, b.x + b.w) + bend : Math.min(a.x, b.x) - bend;
    const c1 = { x: out1, y: y1 + (down ? 30 : -30) };
    const c2 = { x: out1, y: y2 + (down ? -30 : 30) };
    const d = `M ${x1} ${y1} C ${c1.x} ${c1.y} ${c2.x} ${c2.y} ${x2} ${y2}`;
    const points: Point[] = [];
    for (let k = 0; k <= 24; k++) {
      const u = k / 24;
      const m = 1 - u;
      points.push({
        x: m * m * m * x1 + 3 * m * m * u * c1.x + 3 * m * u * u * c2.x + u * u * u * x2,
        y: m * m * m * y1 + 3 * m * m * u * c1.y + 3 * m * u * u * c2.y + u * u * u * y2,
      });
    }
    paths.set(i, { d, points });
  });

  // Labels: the free spot nearest the preferred place along each path (clear of boxes and other labels).
  const placed: Point[] = [];
  const lines = table.transitions.map((_, i) => sample(paths.get(i)!.points, 120));
  const clear = (p: Point, own: number, strict = true) =>
    placed.every((q) => Math.hypot(p.x - q.x, p.y - q.y) >= 2 * LABEL_R + 3) &&
    lines.every((pts, j) => !strict || j === own || pts.every((q) => Math.hypot(p.x - q.x, p.y - q.y) >= LABEL_R + 3)) &&
    [...boxes.values()].every(
      (b) => p.x < b.x - LABEL_R - 2 || p.x > b.x + b.w + LABEL_R + 2 || p.y < b.y - LABEL_R - 2 || p.y > b.y + b.h + LABEL_R + 2,
    );
  const edges: Edge[] = table.transitions.map((t, i) => {
    const { d, points } = paths.get(i)!;
    const samples = sample(points, 60);
    const preferred = boxes.get(t.to)!.terminal ? 0.82 : 0.5;
    const order = samples
      .map((p, k) => ({ p, k, dist: Math.abs(k / (samples.length - 1) - preferred) }))
      .sort((a, b) => a.dist - b.dist || a.k - b.k);
    const label = (order.find((o) => clear(o.p, i)) ?? order.find((o) => clear(o.p, i, false)) ?? order[0]!).p;
    placed.push(label);
    return {
      n: i + 1,
      from: t.from,
      to: t.to,
      trigger: t.trigger,
      d,
      label: { x: Math.round(label.x * 10) / 10, y: Math.round(label.y * 10) / 10 },
    };
  });

  const initial = boxes.get(table.initial)!;
  return {
    width: totalW,
    height: termY + NODE_H + 24,
    boxes: [...boxes.values()],
    edges,
    start: { x: initial.x + initial.w / 2, y: initial.y - 34 },
  };
}

/** Points evenly spaced along a polyline. */
function sample(points: Point[], n: number): Point[] {
  const seg: number[] = [];
  let total = 0;
  for (let i = 1; i < points.length; i++) {
    const l = Math.hypot(points[i]!.x - points[i - 1]!.x, points[i]!.y - points[i - 1]!.y);
    seg.push(l);
    total += l;
  }
  const out: Point[] = [];
  for (let k = 0; k <= n; k++) {
    let target = (k / n) * total;
    let i = 0;
    while (i < seg.length - 1 && target > seg[i]!) target -= seg[i++]!;
    const a = points[i]!;
    const b = points[i + 1] ?? a;
    const f = seg[i] ? target / seg[i]! : 0;
    out.push({ x: a.x + (b.x - a.x) * f, y: a.y + (b.y - a.y) * f });
  }
  return out;
}

/** The diagram as a standalone SVG document (also valid inline in HTML). */
export function stateDiagramSvg(table: StateTable): string {
  const l = layout(table);
  const parts: string[] = [];
  parts.push(
    `<svg xmlns="http://www.w3.org/2000/svg" class="state-diagram" viewBox="0 0 ${l.width} ${l.height}" width="${l.width}" height="${l.height}" role="img" aria-labelledby="sd-title sd-desc">`,
    `<title id="sd-title">TAP task states</title>`,
    `<desc id="sd-desc">The task state machine of task-states.json: ${table.states.length} states, ${table.terminal.length} of them terminal (${table.terminal.join(', ')}), and ${table.transitions.length} transitions, numbered as in the table below the diagram.</desc>`,
    `<defs><marker id="sd-arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" class="sd-head"/></marker></defs>`,
    `<style>.sd-edge{fill:none;stroke:#5b6675;stroke-width:1.4}.sd-head{fill:#5b6675}.sd-box{fill:#eef3fb;stroke:#2f5d9b;stroke-width:1.5}.sd-term{fill:#f3f0e8;stroke:#7a5b1e;stroke-width:1.5}.sd-text{font:600 13px ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;fill:#17202b}.sd-num{fill:#fff;stroke:#5b6675;stroke-width:1.2}.sd-num-text{font:700 10px system-ui,sans-serif;fill:#17202b}.sd-start{fill:#17202b}.sd-g:hover .sd-edge{stroke:#c2410c;stroke-width:2.4}.sd-g:hover .sd-num{stroke:#c2410c}</style>`,
  );
  parts.push(`<circle class="sd-start" cx="${l.start.x}" cy="${l.start.y}" r="6"/>`);
  const initial = l.boxes.find((b) => b.initial)!;
  parts.push(`<path class="sd-edge" d="M ${l.start.x} ${l.start.y + 6} V ${initial.y}" marker-end="url(#sd-arrow)"/>`);
  for (const e of l.edges) {
    parts.push(
      `<g class="sd-g" id="t-${e.n}"><title>${e.n}. ${esc(e.from)} → ${esc(e.to)}: ${esc(e.trigger)}</title>` +
        `<path class="sd-edge" d="${e.d}" marker-end="url(#sd-arrow)"/>` +
        `<circle class="sd-num" cx="${e.label.x}" cy="${e.label.y}" r="${LABEL_R}"/>` +
        `<text class="sd-num-text" x="${e.label.x}" y="${e.label.y + 3.5}" text-anchor="middle">${e.n}</text></g>`,
    );
  }
  for (const b of l.boxes) {
    const cls = b.terminal ? 'sd-term' : 'sd-box';
    const inner = b.terminal
      ? `<rect class="${cls}" x="${b.x + 3}" y="${b.y + 3}" width="${b.w - 6}" height="${b.h - 6}" rx="5" fill="none"/>`
      : '';
    parts.push(
      `<g class="sd-node" id="state-${esc(b.state)}"><rect class="${cls}" x="${b.x}" y="${b.y}" width="${b.w}" height="${b.h}" rx="8"/>${inner}` +
        `<text class="sd-text" x="${b.x + b.w / 2}" y="${b.y + b.h / 2 + 4.5}" text-anchor="middle">${esc(b.state)}</text></g>`,
    );
  }
  parts.push('</svg>');
  return parts.join('\n');
}
