// Metrics of a progressive release, from its status: the step, the pause, the last analysis
// interval (verdict, failures in a row, each signal for both sides) and the split achieved since the
// release began, every replica counted. Every replica reports the same status, so a dashboard takes
// max by (…) over them.

import { Gauge, type Registry } from 'prom-client';
import { METRIC_PREFIX } from '../../defaults.ts';
import { readStep } from '../../api/steps.ts';
import type { CanaryReleaseStatus, Verdict } from '../../api/status-types.ts';

const VERDICTS: readonly Verdict[] = ['Passed', 'Failed', 'Inconclusive'];

export class ProgressMetrics {
  readonly #step: Gauge;
  readonly #steps: Gauge;
  readonly #paused: Gauge;
  readonly #verdict: Gauge<'verdict'>;
  readonly #failures: Gauge;
  readonly #signal: Gauge<'signal' | 'side'>;
  readonly #achieved: Gauge<'service' | 'port' | 'protocol' | 'side'>;

  constructor(registry: Registry) {
    const registers = [registry];
    this.#step = new Gauge({
      name: `${METRIC_PREFIX}release_step`,
      help: 'The step in force counted from 1, as the STEP column names it (2 in 2/3 (index 1): status.currentStep + 1); equal to release_steps once every step is done.',
      registers,
    });
    this.#steps = new Gauge({
      name: `${METRIC_PREFIX}release_steps`,
      help: 'Steps of the release (spec.steps).',
      registers,
    });
    this.#paused = new Gauge({
      name: `${METRIC_PREFIX}release_step_held`,
      help: '1 while the step does not advance (a pause, a promotion or a passing analysis awaited: status.pause).',
      registers,
    });
    this.#verdict = new Gauge({
      name: `${METRIC_PREFIX}analysis_verdict`,
      help: "The last analysis interval's verdict: 1 for Passed, Failed or Inconclusive, 0 for the others.",
      labelNames: ['verdict'],
      registers,
    });
    this.#failures = new Gauge({
      name: `${METRIC_PREFIX}analysis_failures`,
      help: 'Failed analysis intervals in a row (the release rolls back at spec.analysis.failureLimit).',
      registers,
    });
    this.#signal = new Gauge({
      name: `${METRIC_PREFIX}analysis_signal`,
      help: 'Each signal of the last analysis interval (connectErrorRate, resetRate, connectLatencyP99 in ms, udpReplyRate, canaryShare), over the intervals judged together, for the canary and the stable side.',
      labelNames: ['signal', 'side'],
      registers,
    });
    this.#achieved = new Gauge({
      name: `${METRIC_PREFIX}achieved_connections`,
      help: 'New connections (TCP) or flows (UDP) to each side since the release began, every proxy replica counted (status.ports[].achieved).',
      labelNames: ['service', 'port', 'protocol', 'side'],
      registers,
    });
  }

  report(status: CanaryReleaseStatus): void {
    this.reset();
    const step = readStep(status.step);
    if (step !== undefined) {
      this.#step.set(step.number);
      this.#steps.set(step.count);
      this.#paused.set(status.pause == null ? 0 : 1);
    }
    const analysis = status.analysis;
    if (analysis !== undefined) {
      for (const verdict of VERDICTS) this.#verdict.set({ verdict }, analysis.verdict === verdict ? 1 : 0);
      this.#failures.set(analysis.failures);
      for (const signal of analysis.signals) {
        if (signal.canary != null) this.#signal.set({ signal: signal.name, side: 'canary' }, signal.canary);
        if (signal.stable != null) this.#signal.set({ signal: signal.name, side: 'stable' }, signal.stable);
      }
    }
    for (const port of status.ports) {
      if (port.achieved === undefined) continue;
      const labels = { service: port.service, port: String(port.port), protocol: port.protocol };
      this.#achieved.set({ ...labels, side: 'stable' }, port.achieved.stable);
      this.#achieved.set({ ...labels, side: 'canary' }, port.achieved.canary);
    }
  }

  reset(): void {
    for (const gauge of [
      this.#step,
      this.#steps,
      this.#paused,
      this.#verdict,
      this.#failures,
      this.#signal,
      this.#achieved,
    ])
      gauge.reset();
  }
}
