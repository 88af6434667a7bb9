import { performance } from 'node:perf_hooks';
import type { WindowResult } from './protocol.js';
import type { WindowProfiler } from './window-profiler.js';

/** RSS is sampled this often; a 100-message prefetch is consumed in a few ms, so peaks are not missed for long. */
const RSS_SAMPLE_MS = 20;

/**
 * Wall time, CPU time and RSS from the first delivery to the last handled message. Opening at the first delivery
 * leaves the application's start-up (module loading, Nest bootstrap, topology declaration) out of every figure.
 */
export class MeasuredWindow {
  private startedAt = 0;
  private cpuAtStart?: NodeJS.CpuUsage;
  private rssStart = 0;
  private rssPeak = 0;
  private sampler?: NodeJS.Timeout;
  private result?: Omit<WindowResult, 'messages'>;

  constructor(private readonly profiler?: WindowProfiler) {}

  open(): void {
    if (this.cpuAtStart) return;
    this.profiler?.start();
    this.startedAt = performance.now();
    this.cpuAtStart = process.cpuUsage();
    this.rssStart = this.rssPeak = process.memoryUsage.rss();
    this.sampler = setInterval(() => this.sampleRss(), RSS_SAMPLE_MS);
  }

  close(): void {
    if (!this.cpuAtStart || this.result) return;
    const elapsedMs = performance.now() - this.startedAt;
    const cpu = process.cpuUsage(this.cpuAtStart);
    this.sampleRss();
    clearInterval(this.sampler);
    this.profiler?.stop();
    this.result = { elapsedMs, cpuUs: cpu.user + cpu.system, rssStartBytes: this.rssStart, rssPeakBytes: this.rssPeak };
  }

  resultFor(messages: number): WindowResult {
    if (!this.result) throw new Error('the measured window never closed');
    return { messages, ...this.result };
  }

  private sampleRss(): void {
    this.rssPeak = Math.max(this.rssPeak, process.memoryUsage.rss());
  }
}
