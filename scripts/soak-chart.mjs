// Draws the samples of a soak run (test/soak, SOAK_REPORT=<file.json>) as a plain SVG, as bench/report draws the
// bench's: RSS and heap, and event-loop delay p99, by minute, with the connection kills and the memory alarm marked.
//   node scripts/soak-chart.mjs <samples.json> <chart.svg>
import { readFileSync, writeFileSync } from 'node:fs';

const [input, output] = process.argv.slice(2);
if (!input || !output) {
  console.error('usage: node scripts/soak-chart.mjs <samples.json> <chart.svg>');
  process.exit(2);
}
const run = JSON.parse(readFileSync(input, 'utf8'));
const samples = run.samples;
const WIDTH = 960;
const LEFT = 70;
const PLOT_WIDTH = 820;
const PANEL_HEIGHT = 170;
const GAP = 50;
const lastMinute = Math.max(...samples.map((s) => s.minute));
const xOf = (minute) => LEFT + (minute / lastMinute) * PLOT_WIDTH;
const escape = (text) => String(text).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

function panel(top, title, unit, series) {
  const max = 1.1 * Math.max(...series.flatMap((s) => samples.map(s.value)));
  const yOf = (v) => top + PANEL_HEIGHT - (v / max) * PANEL_HEIGHT;
  const parts = [`<text x="${LEFT}" y="${top - 12}" class="title">${escape(title)}</text>`];
  for (const fraction of [0, 0.5, 1]) {
    const y = yOf(max * fraction);
    parts.push(`<line x1="${LEFT}" x2="${LEFT + PLOT_WIDTH}" y1="${y}" y2="${y}" class="grid"/>`);
    parts.push(`<text x="${LEFT - 6}" y="${y + 4}" class="axis" text-anchor="end">${(max * fraction).toFixed(0)} ${unit}</text>`);
  }
  if (run.warmUp) {
    const x = xOf(samples[run.warmUp - 1].minute);
    parts.push(`<rect x="${LEFT}" y="${top}" width="${x - LEFT}" height="${PANEL_HEIGHT}" class="warmup"/>`);
  }
  for (const s of samples.filter((s) => s.event)) {
    const x = xOf(s.minute);
    parts.push(`<line x1="${x}" x2="${x}" y1="${top}" y2="${top + PANEL_HEIGHT}" class="${s.event.startsWith('killed') ? 'kill' : 'alarm'}"/>`);
  }
  series.forEach((s, i) => {
    const points = samples.map((sample) => `${xOf(sample.minute).toFixed(1)},${yOf(s.value(sample)).toFixed(1)}`).join(' ');
    parts.push(`<polyline points="${points}" fill="none" stroke="${s.color}" stroke-width="2"/>`);
    parts.push(`<text x="${LEFT + PLOT_WIDTH - 200 + i * 100}" y="${top - 12}" class="legend" fill="${s.color}">${escape(s.label)}</text>`);
  });
  return parts.join('\n');
}

const top1 = 60;
const top2 = top1 + PANEL_HEIGHT + GAP;
const height = top2 + PANEL_HEIGHT + 60;
const kills = samples.filter((s) => s.event?.startsWith('killed')).length;
const last = samples[samples.length - 1];
const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}" font-family="sans-serif">
<style>.title{font-size:14px;font-weight:bold}.axis{font-size:11px;fill:#555}.legend{font-size:12px;font-weight:bold}.grid{stroke:#e5e7eb}.kill{stroke:#dc2626;stroke-dasharray:4 3}.alarm{stroke:#d97706;stroke-width:2;stroke-dasharray:2 2}.warmup{fill:#f3f4f6}.note{font-size:11px;fill:#555}</style>
<rect width="100%" height="100%" fill="white"/>
<text x="${LEFT}" y="24" class="title">Soak: ${run.minutes} min on RabbitMQ ${escape(run.node)}: ${last.published} published, ${last.replayed} replayed, ${kills} connection kills, 1 memory alarm</text>
${panel(top1, 'Memory after a full GC', 'MB', [
  { label: 'RSS', color: '#2563eb', value: (s) => s.rssMb },
  { label: 'heap', color: '#16a34a', value: (s) => s.heapMb },
])}
${panel(top2, 'Event-loop delay p99 (2 shared cores)', 'ms', [{ label: 'lag p99', color: '#7c3aed', value: (s) => s.lagP99Ms }])}
<text x="${LEFT}" y="${height - 30}" class="note">minutes 0 to ${lastMinute.toFixed(0)}; grey: warm-up; red dashes: a connection kill; orange: the memory alarm</text>
</svg>
`;
writeFileSync(output, svg);
console.log(`Written: ${output}`);
