// The chart docs/performance.md shows: one horizontal bar panel per figure, as a plain SVG string (no chart library).
import type { ContenderId } from '../contenders/registry.js';
import type { ScenarioResults } from '../scenarios/results.js';
import type { Spread } from '../runner/stats.js';
import { fixed, int } from './format.js';
import { TARGETS } from './targets.js';

interface Bar {
  label: string;
  value: Spread;
  color: string;
  text: string;
}

interface Panel {
  title: string;
  bars: Bar[];
  /** Vertical reference lines: a target, or the baseline. */
  markers?: Array<{ value: number; label: string; anchor?: 'start' | 'middle' | 'end' }>;
  /** Shown instead of bars when there is nothing to draw. */
  empty?: string;
}

const WIDTH = 960;
const LABEL_WIDTH = 260;
const PLOT_WIDTH = 560;
const BAR_HEIGHT = 16;
const BAR_GAP = 6;
const TITLE_HEIGHT = 30;
const MARKER_LABEL_HEIGHT = 14;
const PANEL_GAP = 18;

const COLORS: Record<ContenderId, string> = {
  ours: '#2563eb',
  'ours-transport': '#60a5fa',
  raw: '#6b7280',
  'raw-coalesced': '#374151',
  golevelup: '#d97706',
  'nest-rmq': '#dc2626',
  'raw-dlx': '#9ca3af',
  'raw-props': '#4b5563',
};

const escape = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
const px = (n: number) => n.toFixed(1);

function renderPanel(panel: Panel, top: number): { svg: string; height: number } {
  const parts = [`<text x="16" y="${top + 20}" class="title">${escape(panel.title)}</text>`];
  if (panel.bars.length === 0) {
    parts.push(`<text x="${LABEL_WIDTH}" y="${top + TITLE_HEIGHT + 14}" class="note">${escape(panel.empty ?? 'no data')}</text>`);
    return { svg: parts.join('\n'), height: TITLE_HEIGHT + 24 };
  }
  const scaleMax = 1.08 * Math.max(...panel.bars.map((b) => b.value.max), ...(panel.markers ?? []).map((m) => m.value));
  const xOf = (v: number) => LABEL_WIDTH + (Math.max(0, v) / scaleMax) * PLOT_WIDTH;
  const plotTop = top + TITLE_HEIGHT;
  const plotHeight = panel.bars.length * (BAR_HEIGHT + BAR_GAP);
  // Reference lines behind the bars, labelled underneath.
  for (const marker of panel.markers ?? []) {
    const x = px(xOf(marker.value));
    parts.push(
      `<line x1="${x}" x2="${x}" y1="${plotTop - 4}" y2="${plotTop + plotHeight}" class="marker"/>`,
      `<text x="${x}" y="${plotTop + plotHeight + MARKER_LABEL_HEIGHT - 4}" class="marker-label" text-anchor="${marker.anchor ?? 'middle'}">${escape(marker.label)}</text>`,
    );
  }
  panel.bars.forEach((bar, i) => {
    const y = plotTop + i * (BAR_HEIGHT + BAR_GAP);
    const mid = y + BAR_HEIGHT / 2;
    parts.push(
      `<text x="${LABEL_WIDTH - 8}" y="${px(mid + 4)}" class="label" text-anchor="end">${escape(bar.label)}</text>`,
      `<rect x="${LABEL_WIDTH}" y="${y}" width="${px(xOf(bar.value.median) - LABEL_WIDTH)}" height="${BAR_HEIGHT}" fill="${bar.color}" rx="2"/>`,
    );
    if (bar.value.max > bar.value.min) {
      // The range over rounds.
      parts.push(`<line x1="${px(xOf(bar.value.min))}" x2="${px(xOf(bar.value.max))}" y1="${px(mid)}" y2="${px(mid)}" class="range"/>`);
      for (const v of [bar.value.min, bar.value.max])
        parts.push(`<line x1="${px(xOf(v))}" x2="${px(xOf(v))}" y1="${y + 3}" y2="${y + BAR_HEIGHT - 3}" class="range"/>`);
    }
    parts.push(
      `<text x="${px(Math.max(xOf(bar.value.max), xOf(bar.value.median)) + 6)}" y="${px(mid + 4)}" class="value">${escape(bar.text)}</text>`,
    );
  });
  return { svg: parts.join('\n'), height: TITLE_HEIGHT + plotHeight + (panel.markers?.length ? MARKER_LABEL_HEIGHT : 0) };
}

function panelsOf(r: ScenarioResults): Panel[] {
  const panels: Panel[] = [];
  const happy = r['happy-path'];
  if (happy) {
    panels.push({
      title: `Happy path: throughput relative to raw amqplib with acks coalesced as ours (${int(happy.messages)} messages, higher is better)`,
      bars: happy.rows.map((row) => ({
        label: row.label,
        value: row.throughputVsCoalesced,
        color: COLORS[row.id],
        text: `${fixed(row.throughputVsCoalesced.median, 2)}x  (${int(row.throughput.median)} msg/s)`,
      })),
      markers: [
        // Close together: label one to the left, the other to the right.
        { value: TARGETS.rawRatio, label: `target ${TARGETS.rawRatio}x`, anchor: 'end' },
        { value: 1, label: 'raw, coalesced', anchor: 'start' },
      ],
    });
    panels.push({
      title: 'Happy path: CPU time of the consuming process per message, µs (lower is better)',
      bars: happy.rows.map((row) => ({
        label: row.label,
        value: row.cpuUsPerMessage,
        color: COLORS[row.id],
        text: `${fixed(row.cpuUsPerMessage.median)} µs`,
      })),
    });
  }
  const retry = r['retry-path'];
  if (retry) {
    panels.push({
      title: `Retry lateness beyond the ${retry.tierDelayMs} ms tier, ms, at ${int(retry.pacedPerSecond)} msg/s (lower is better)`,
      bars: retry.rows.flatMap((row) =>
        (['p50', 'p95', 'p99', 'max'] as const).map((p) => ({
          label: `${row.label} ${p}`,
          value: row.lateness[p],
          color: COLORS[row.id],
          text: `${fixed(row.lateness[p].median)} ms`,
        })),
      ),
      markers: [{ value: TARGETS.latenessP99Ms, label: `target p99 ${TARGETS.latenessP99Ms} ms` }],
    });
  }
  const delays = r.delays;
  if (delays) {
    panels.push(
      delays.available
        ? {
            title: `Delayed delivery lateness, ms (${int(delays.messages)} messages, 100 ms to ${int(delays.maxDelayMs)} ms)`,
            bars: (['p50', 'p95', 'p99', 'max'] as const).map((p) => ({
              label: p,
              value: delays.lateness[p],
              color: COLORS.ours,
              text: `${fixed(delays.lateness[p].median)} ms`,
            })),
            markers: [{ value: TARGETS.latenessP99Ms, label: `target p99 ${TARGETS.latenessP99Ms} ms` }],
          }
        : { title: 'Delayed delivery', bars: [], empty: 'not yet available' },
    );
  }
  const memory = r.memory;
  if (memory) {
    panels.push({
      title: 'Peak RSS of the consuming process by backlog, MB (flat is the goal)',
      bars: memory.rows.map((row) => ({
        label: `${row.label}, ${int(row.backlog)}`,
        value: row.rssPeakMb,
        color: COLORS[row.id],
        text: `${fixed(row.rssPeakMb.median, 0)} MB`,
      })),
    });
  }
  const publish = r.publish;
  if (publish) {
    panels.push(
      {
        title: `Publish throughput, confirmed msg/s, at most ${int(publish.concurrency)} unconfirmed (higher is better)`,
        bars: publish.rows.map((row) => ({
          label: row.label,
          value: row.throughput,
          color: COLORS[row.id],
          text: `${int(row.throughput.median)} msg/s  (${fixed(row.throughputVsRaw.median, 2)}x raw)`,
        })),
      },
      {
        title: `Publish flood: RSS growth of the publishing process over ${int(publish.floodMessages)} publishes called at once, MB (lower is better)`,
        bars: publish.rows.map((row) => ({
          label: row.label,
          value: row.floodRssGrowthMb,
          color: COLORS[row.id],
          text: `${fixed(row.floodRssGrowthMb.median, 0)} MB`,
        })),
      },
    );
  }
  return panels;
}

/** The chart of whatever scenarios ran; `subtitle` names the machine and the date. */
export function renderChart(results: ScenarioResults, subtitle: string): string {
  const parts: string[] = [];
  let y = 44;
  for (const panel of panelsOf(results)) {
    const { svg, height } = renderPanel(panel, y);
    parts.push(svg);
    y += height + PANEL_GAP;
  }
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${y}" viewBox="0 0 ${WIDTH} ${y}" font-family="system-ui, -apple-system, 'Segoe UI', sans-serif">
<style>
  .heading { font-size: 16px; font-weight: 600; fill: #111827; }
  .subtitle { font-size: 11px; fill: #6b7280; }
  .title { font-size: 13px; font-weight: 600; fill: #111827; }
  .label, .value { font-size: 12px; fill: #374151; }
  .value { paint-order: stroke; stroke: #ffffff; stroke-width: 4px; stroke-linejoin: round; }
  .note { font-size: 12px; fill: #6b7280; font-style: italic; }
  .range { stroke: #111827; stroke-width: 1.2; }
  .marker { stroke: #111827; stroke-width: 1; stroke-dasharray: 4 3; }
  .marker-label { font-size: 10px; fill: #374151; }
</style>
<rect width="100%" height="100%" fill="#ffffff"/>
<text x="16" y="22" class="heading">nestjs-amqp-retry benchmarks</text>
<text x="16" y="37" class="subtitle">${escape(subtitle)} · bars: median over rounds, whiskers: range</text>
${parts.join('\n')}
</svg>
`;
}
