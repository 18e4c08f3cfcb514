// What the proxy says of its passes, to Prometheus and to the log: a counter and a histogram of
// passes, the release's phase and served weights as gauges, the progress metrics, and a log line
// only when something a human would want to know changed (a phase, a failure, a new error), never
// one per pass.

import type { Logger } from 'pino';
import { Gauge, type Registry } from 'prom-client';
import type { L4Config } from '../../config/types.ts';
import { METRIC_PREFIX } from '../../defaults.ts';
import { describeError } from '../../kube/patch.ts';
import { PassMetrics } from '../../controller-kit/pass-metrics.ts';
import type { CanaryReleaseCondition } from '../../api/status-types.ts';
import type { Desired, Step } from '../pass/desired.ts';
import { ProgressMetrics } from '../progress/metrics.ts';
import { listenerName, servedWeight } from '../service/l4.ts';

export class PassReporter {
  readonly #log: Logger;
  readonly #release: string;
  readonly #namespace: string;
  readonly #passes: PassMetrics;
  readonly #releaseInfo: Gauge<'release' | 'namespace' | 'phase'>;
  readonly #canaryWeight: Gauge<'service' | 'port' | 'protocol'>;
  readonly #progress: ProgressMetrics;
  /** What was last logged, so that a state worth a human's attention is logged once, not per pass. */
  readonly #lastSaid = { phase: '', failure: '', error: '', missing: false };

  constructor({
    registry,
    log,
    release,
    namespace,
  }: { registry: Registry; log: Logger; release: string; namespace: string }) {
    this.#log = log;
    this.#release = release;
    this.#namespace = namespace;
    const registers = [registry];
    this.#passes = new PassMetrics({
      registry,
      prefix: METRIC_PREFIX,
      passesHelp: 'Reconcile passes of the CanaryRelease, by result.',
      durationHelp: 'Duration of a reconcile pass, API writes included.',
    });
    this.#releaseInfo = new Gauge({
      name: `${METRIC_PREFIX}release_info`,
      help: 'The CanaryRelease this proxy runs; phase: Running, Holding (Failure, nothing changed), Adopting, Deprecating, Adopted, Deprecated.',
      labelNames: ['release', 'namespace', 'phase'],
      registers,
    });
    this.#canaryWeight = new Gauge({
      name: `${METRIC_PREFIX}canary_weight`,
      help: 'Canary weight in effect per Service port (a --weight override included), as served by the data plane.',
      labelNames: ['service', 'port', 'protocol'],
      registers,
    });
    this.#progress = new ProgressMetrics(registry);
  }

  /** Times a pass; the returned function ends the timer. */
  startPass(): () => void {
    return this.#passes.time();
  }

  passSucceeded(): void {
    this.#passes.count('success');
    if (this.#lastSaid.error !== '') this.#log.info('reconcile succeeds again');
    this.#lastSaid.error = '';
  }

  passFailed(): void {
    this.#passes.count('error');
  }

  /** The CanaryRelease is not (or no longer) in the cache. */
  releaseMissing(): void {
    this.#canaryWeight.reset();
    if (!this.#lastSaid.missing) {
      if (this.#lastSaid.phase === '') this.#log.warn('CanaryRelease not found; waiting for it');
      else this.#log.info('CanaryRelease is gone; nothing left to do');
    }
    this.#lastSaid.missing = true;
    this.#releaseInfo.reset();
    this.#progress.reset();
  }

  releaseFound(): void {
    this.#lastSaid.missing = false;
  }

  /** A pass's outcome; `served`: the data plane runs its config (the weights it reports are true). */
  report(desired: Desired, served: L4Config | undefined): void {
    const phase = desired.status.phase;
    this.#releaseInfo.reset();
    this.#releaseInfo.set({ release: this.#release, namespace: this.#namespace, phase }, 1);
    this.#progress.report(desired.status);
    if (served !== undefined) this.reportWeights(desired, served);
    if (phase !== this.#lastSaid.phase) this.#log.info({ phase }, `CanaryRelease is ${phase}`);
    this.#lastSaid.phase = phase;
    const failure = desired.status.conditions.find((condition) => condition.type === 'Failure');
    const failureText = failure?.status === 'True' ? describeCondition(failure) : '';
    if (failureText !== this.#lastSaid.failure) {
      if (failureText !== '') this.#log.error({ reason: failure?.reason }, `failure: ${failureText}`);
      else this.#log.info('failure cleared');
    }
    this.#lastSaid.failure = failureText;
  }

  /** canary_weight: what the data plane serves now, per port it listens for. */
  reportWeights(desired: Desired, served: L4Config): void {
    const listeners = new Set(served.listeners.map((listener) => listener.name));
    this.#canaryWeight.reset();
    for (const port of desired.status.ports) {
      if (listeners.has(listenerName(port)))
        this.#canaryWeight.set(
          { service: port.service, port: String(port.port), protocol: port.protocol },
          servedWeight(port),
        );
    }
  }

  sayStep(step: Step): void {
    if (step.kind !== 'patchService') return;
    const messages: Partial<Record<typeof step.reason, string>> = {
      retarget: `retargeted Service ${step.name}: it now selects the proxy`,
      adopt: `adopted: Service ${step.name} now selects the canary pods`,
      restore: `restored Service ${step.name} as it was before the release`,
    };
    const message = messages[step.reason];
    if (message !== undefined) this.#log.info({ service: step.name, step: step.reason }, message);
  }

  sayError(err: unknown, retryInMs: number): void {
    const message = describeError(err);
    // The same failure again is a retry, not news.
    const level = message === this.#lastSaid.error ? 'debug' : 'warn';
    this.#log[level]({ error: message, retryInMs }, 'reconcile failed; retrying');
    this.#lastSaid.error = message;
  }
}

function describeCondition(condition: CanaryReleaseCondition): string {
  return `${condition.reason}: ${condition.message}`;
}
