import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';

/** 100 us between samples: a measured window can be under a second, and the default 1 ms would give a few hundred. */
const SAMPLING_INTERVAL_US = 100;

/**
 * V8's CPU profiler (what node --cpu-prof runs) over the measured window only: with --cpu-prof, module loading and
 * the Nest bootstrap would be a large share of a short run's samples. On the main thread the inspector answers
 * synchronously, so the profile starts at the first delivery exactly.
 */
export class WindowProfiler {
  private readonly session = new Session();

  constructor(private readonly file: string) {}

  start(): void {
    this.session.connect();
    this.session.post('Profiler.enable');
    this.session.post('Profiler.setSamplingInterval', { interval: SAMPLING_INTERVAL_US });
    this.session.post('Profiler.start');
  }

  /** Writes the profile as a .cpuprofile file (Chrome DevTools, speedscope, or bench/profile/summarize-profile.js). */
  stop(): void {
    this.session.post('Profiler.stop', (error, result) => {
      if (error) throw error;
      writeFileSync(this.file, JSON.stringify(result.profile));
    });
    this.session.disconnect();
  }
}
