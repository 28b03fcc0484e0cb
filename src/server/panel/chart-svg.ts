import { escapeHtml, html, raw, type Html } from './html.js';

/**
 * Charts drawn on the server as SVG: no script, no library, nothing the CSP
 * refuses. A chart is an image with its title and a sentence of what it
 * shows (`role="img"`, `aria-labelledby`), drawn in a viewBox that scales to
 * its box (width 100% in panel.css); colours are classes (`s-<name>`) so
 * panel.css gives them, dark mode included. Its numbers are in a table next
 * to it for those who cannot see it (the page puts them there).
 */

export interface Series {
  /** The class suffix of its colour (`s-${key}`) and its name in the legend. */
  key: string;
  label: string;
}

export interface ChartSpec {
  /** Unique on the page: ids of its title and description. */
  id: string;
  title: string;
  /** One sentence of what it shows and its largest value, for screen readers. */
  desc: string;
  series: Series[];
  /** One value per series per bar (null: nothing known, drawn as a gap); oldest bar first. */
  bars: Array<Array<number | null>>;
  /** Labels under the axis at these bar indexes. */
  ticks: Array<{ at: number; label: string }>;
  /** The y axis' unit, after its top value. */
  unit?: string;
}

const W = 640;
const H = 220;
const PAD = { left: 60, right: 8, top: 14, bottom: 34 };
const PLOT_W = W - PAD.left - PAD.right;
const PLOT_H = H - PAD.top - PAD.bottom;

/** A round top for the axis: 1, 2 or 5 times a power of ten at or above `max` (1 for nothing). */
export function niceMax(max: number): number {
  if (max <= 0) return 1;
  const p = 10 ** Math.floor(Math.log10(max));
  for (const m of [1, 2, 5, 10]) if (m * p >= max) return m * p;
  return 10 * p;
}

const fmt = (n: number) => (Number.isInteger(n) ? String(n) : n.toFixed(1));

function frame(spec: ChartSpec, top: number, body: Html): Html {
  const x = (i: number) => PAD.left + (i + 0.5) * (PLOT_W / Math.max(1, spec.bars.length));
  return html`<figure class="chart">
    <svg viewBox="0 0 ${W} ${H}" role="img" aria-labelledby="${spec.id}-t ${spec.id}-d" preserveAspectRatio="xMidYMid meet">
      <title id="${spec.id}-t">${spec.title}</title>
      <desc id="${spec.id}-d">${spec.desc}</desc>
      <g class="grid">
        ${[0, 0.5, 1].map((f) => {
          const y = PAD.top + PLOT_H * (1 - f);
          return html`<line x1="${PAD.left}" x2="${W - PAD.right}" y1="${y}" y2="${y}" />
            <text class="axis" x="${PAD.left - 6}" y="${y + 4}" text-anchor="end">${fmt(top * f)}</text>`;
        })}
      </g>
      ${body}
      <g class="ticks">
        ${spec.ticks.map((t, i) => {
          // The first and last labels sit inside the frame: anchored at their outer end.
          const anchor = i === 0 ? 'start' : i === spec.ticks.length - 1 ? 'end' : 'middle';
          const at = i === 0 ? PAD.left : i === spec.ticks.length - 1 ? W - PAD.right : x(t.at);
          return html`<text class="axis" x="${at}" y="${H - 8}" text-anchor="${anchor}">${t.label}</text>`;
        })}
      </g>
    </svg>
    <figcaption>
      <strong>${spec.title}</strong>${spec.unit ? html` <span class="hint">(${spec.unit})</span>` : ''}
      <ul class="legend">
        ${spec.series.map(
          (s) => html`<li><svg class="swatch" viewBox="0 0 10 10" aria-hidden="true"><rect class="s-${s.key}" width="10" height="10" /></svg>${s.label}</li>`,
        )}
      </ul>
    </figcaption>
  </figure>`;
}

/** Bars stacked by series (sends by estado, attempts by outcome). */
export function stackedBars(spec: ChartSpec): Html {
  const top = niceMax(Math.max(0, ...spec.bars.map((b) => b.reduce<number>((a, v) => a + (v ?? 0), 0))));
  const slot = PLOT_W / Math.max(1, spec.bars.length);
  const w = Math.max(1, slot * 0.8);
  // A full week is hundreds of rects: each is written as one string of numbers computed here, its class escaped once per series.
  const cls = spec.series.map((s) => escapeHtml(`s-${s.key}`));
  const width = w.toFixed(2);
  let rects = '';
  spec.bars.forEach((bar, i) => {
    let base = 0;
    const x = (PAD.left + i * slot + (slot - w) / 2).toFixed(2);
    bar.forEach((v, k) => {
      if (!v) return;
      const h = (v / top) * PLOT_H;
      const y = PAD.top + PLOT_H - ((base + v) / top) * PLOT_H;
      rects += `<rect class="${cls[k]!}" x="${x}" y="${y.toFixed(2)}" width="${width}" height="${h.toFixed(2)}" />`;
      base += v;
    });
  });
  return frame(spec, top, html`<g class="bars">${raw(rects)}</g>`);
}

/** A line per series; a bar with no value breaks its line. */
export function lines(spec: ChartSpec): Html {
  const top = niceMax(Math.max(0, ...spec.bars.flatMap((b) => b.map((v) => v ?? 0))));
  const slot = PLOT_W / Math.max(1, spec.bars.length);
  const paths = spec.series.map((s, k) => {
    let d = '';
    const dots: Html[] = [];
    const at = (i: number) => spec.bars[i]?.[k] ?? null;
    spec.bars.forEach((_, i) => {
      const v = at(i);
      if (v === null) return;
      const x = (PAD.left + (i + 0.5) * slot).toFixed(2);
      const y = (PAD.top + PLOT_H - (v / top) * PLOT_H).toFixed(2);
      d += `${at(i - 1) === null ? 'M' : 'L'}${x} ${y} `;
      // A value with no neighbour has no line to show it: a dot does.
      if (at(i - 1) === null && at(i + 1) === null) dots.push(html`<circle class="s-${s.key}" cx="${x}" cy="${y}" r="4" />`);
    });
    return d === '' ? html`` : html`<path class="line s-${s.key}" d="${d.trim()}" />${dots}`;
  });
  return frame(spec, top, html`<g class="lines">${paths}</g>`);
}
