/**
 * Chart.js plugins of the scatter chart (charts.ts): interval whiskers on both axes around each point,
 * and a note in the corner of the plot where the better points lie.
 *
 * Hand-written because Chart.js draws no error bars of its own. The whiskers of a dataset are computed
 * for all its points at once (`whiskerSegments`, a pure function the tests check) and stroked as one path.
 */

import type { Chart, Plugin } from "chart.js";

/** A point's [lower, upper] bounds on each axis; null where it has none. */
export interface Interval2D {
  x: [number, number] | null;
  y: [number, number] | null;
}

/** A dataset carrying its points' intervals, parallel to its `data`. */
export interface WithIntervals {
  hatlabIntervals?: Array<Interval2D | null>;
}

export interface Segment {
  x1: number;
  y1: number;
  x2: number;
  y2: number;
}

/**
 * The line segments of the whiskers of `points` (pixel positions) with `intervals` (data values):
 * per point and axis, the whisker from lower to upper through the point and a cap of half-length
 * `cap` across each end. `toX` / `toY` turn data values into pixels.
 */
export function whiskerSegments(
  points: Array<{ x: number; y: number }>,
  intervals: Array<Interval2D | null>,
  toX: (value: number) => number,
  toY: (value: number) => number,
  cap: number,
): Segment[] {
  const out: Segment[] = [];
  points.forEach((p, i) => {
    const bounds = intervals[i];
    if (!bounds) return;
    if (bounds.x) {
      const [lo, hi] = bounds.x.map(toX);
      out.push({ x1: lo, y1: p.y, x2: hi, y2: p.y });
      out.push({ x1: lo, y1: p.y - cap, x2: lo, y2: p.y + cap });
      out.push({ x1: hi, y1: p.y - cap, x2: hi, y2: p.y + cap });
    }
    if (bounds.y) {
      const [lo, hi] = bounds.y.map(toY);
      out.push({ x1: p.x, y1: lo, x2: p.x, y2: hi });
      out.push({ x1: p.x - cap, y1: lo, x2: p.x + cap, y2: lo });
      out.push({ x1: p.x - cap, y1: hi, x2: p.x + cap, y2: hi });
    }
  });
  return out;
}

const CAP_PX = 4;

/** Strokes every visible dataset's whiskers in the dataset's colour, over the points. */
export const whiskersPlugin: Plugin<"scatter"> = {
  id: "hatlabWhiskers",
  afterDatasetsDraw(chart: Chart<"scatter">) {
    const ctx = chart.ctx;
    const { x: xScale, y: yScale } = chart.scales;
    chart.data.datasets.forEach((dataset, d) => {
      const intervals = (dataset as WithIntervals).hatlabIntervals;
      const meta = chart.getDatasetMeta(d);
      if (!intervals || meta.hidden) return;
      const points = meta.data.map((p) => p.getProps(["x", "y"], true) as { x: number; y: number });
      const segments = whiskerSegments(
        points,
        intervals,
        (v) => xScale.getPixelForValue(v),
        (v) => yScale.getPixelForValue(v),
        CAP_PX,
      );
      if (!segments.length) return;
      ctx.save();
      ctx.strokeStyle = String(dataset.borderColor ?? "#222");
      ctx.lineWidth = 1.5;
      ctx.beginPath();
      for (const s of segments) {
        ctx.moveTo(s.x1, s.y1);
        ctx.lineTo(s.x2, s.y2);
      }
      ctx.stroke();
      ctx.restore();
    });
  },
};

export type Corner = "top right" | "top left" | "bottom right" | "bottom left";

export const CORNERS: readonly Corner[] = ["top right", "top left", "bottom right", "bottom left"];

const ARROWS: Record<Corner, string> = {
  "top right": "↗",
  "top left": "↖",
  "bottom right": "↘",
  "bottom left": "↙",
};

/** The note's text with an arrow pointing into `corner` (on the corner's side). */
export function cornerText(corner: Corner, text: string): string {
  return corner.endsWith("right") ? `${text} ${ARROWS[corner]}` : `${ARROWS[corner]} ${text}`;
}

/** A plugin writing `text` inside `corner` of the plot area, under the points and whiskers. */
export function cornerNotePlugin(corner: Corner, text: string): Plugin<"scatter"> {
  return {
    id: "hatlabCornerNote",
    beforeDatasetsDraw(chart: Chart<"scatter">) {
      const { left, right, top, bottom } = chart.chartArea;
      const ctx = chart.ctx;
      const pad = 6;
      ctx.save();
      ctx.fillStyle = "#4a5560";
      ctx.font = "italic 12px system-ui, sans-serif";
      ctx.textAlign = corner.endsWith("right") ? "right" : "left";
      ctx.textBaseline = corner.startsWith("top") ? "top" : "bottom";
      ctx.fillText(
        cornerText(corner, text),
        corner.endsWith("right") ? right - pad : left + pad,
        corner.startsWith("top") ? top + pad : bottom - pad,
      );
      ctx.restore();
    },
  };
}
