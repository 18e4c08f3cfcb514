// The metrics of a control loop's passes: a counter by result and a histogram of durations, named
// `<prefix>reconcile_total` and `<prefix>reconcile_duration_seconds` (the proxy's and the manager's
// differ only in prefix and help; both are scraped by these names).

import { Counter, Histogram, type Registry } from 'prom-client';

export type PassResult = 'success' | 'error';

export interface PassMetricsOptions {
  readonly registry: Registry;
  /** Before `reconcile_total`: e.g. `canary_l4_` or `canary_l4_manager_`. */
  readonly prefix: string;
  readonly passesHelp: string;
  readonly durationHelp: string;
}

export class PassMetrics {
  readonly #passes: Counter<'result'>;
  readonly #duration: Histogram;

  constructor({ registry, prefix, passesHelp, durationHelp }: PassMetricsOptions) {
    const registers = [registry];
    const labelNames = ['result'] as const;
    this.#passes = new Counter({ name: `${prefix}reconcile_total`, help: passesHelp, labelNames, registers });
    this.#duration = new Histogram({ name: `${prefix}reconcile_duration_seconds`, help: durationHelp, registers });
  }

  /** Starts timing a pass; the returned function ends it. */
  time(): () => void {
    return this.#duration.startTimer();
  }

  count(result: PassResult): void {
    this.#passes.inc({ result });
  }

  /** Starts timing a pass; the returned function ends it and counts its result. */
  pass(): (result: PassResult) => void {
    const end = this.time();
    return (result) => {
      end();
      this.count(result);
    };
  }
}
