// The control loop of `canary-l4 gateway`: the informers only trigger the work loop; its single
// worker assembles the world from the caches, plans the Gateway (model/resolve.ts, pure), applies
// the L4 config to the data plane first (a listener whose port cannot be bound is left out and said
// in its status; the others serve), then, on the leader only, writes the statuses that differ.
// Failures retry with capped backoff forever; a periodic resync repairs what no event announced.
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { formatTime } from '../api/conditions.ts';
import { GATEWAY_CONTROLLER_NAME } from '../api/gateway/names.ts';
import type { Gateway, GatewayAddress } from '../api/gateway/types.ts';
import type { L4Config } from '../config/types.ts';
import { OWN_WRITES_WAIT_MS, WORK_MAX_BACKOFF_MS } from '../controller-kit/constants.ts';
import { OwnWrites } from '../controller-kit/own-writes.ts';
import { PassMetrics } from '../controller-kit/pass-metrics.ts';
import { METRIC_PREFIX } from '../defaults.ts';
import { BindError } from '../errors.ts';
import { showsResourceVersion } from '../controller-kit/resource-version.ts';
import { WorkLoop } from '../controller-kit/work-loop.ts';
import { boundedCall, type KubeClients } from '../kube/client.ts';
import { describeError } from '../kube/patch.ts';
import { hostAddresses, serviceAddresses } from './addresses.ts';
import { forgetGateway, type GatewayPlan, planGateway } from './model/resolve.ts';
import { describeWrite, routeStatusWrites, type StatusWrite, statusWrites, writeStatus } from './status-writes.ts';
import { GatewayWatches } from './watches.ts';

/** What the controller needs of the process it runs in (runtime/runtime.ts's Runtime is one). */
export interface GatewayProcess {
  readonly log: Logger;
  /** Where the passes' metrics are registered. */
  readonly registry: Registry;
  applyConfig(config: L4Config): Promise<boolean>;
  setReady(ready: boolean): void;
}

export interface GatewayControllerOptions {
  readonly process: GatewayProcess;
  readonly clients: KubeClients;
  readonly namespace: string;
  readonly gateway: string;
  /** --service: the Service in front of this Gateway's pods, whose addresses are the Gateway's. */
  readonly service: string | undefined;
  /** --address values (without --service). */
  readonly addresses: readonly string[];
  readonly listenHost: string | undefined;
  readonly reservedPorts: ReadonlySet<number>;
  readonly resyncMs: number;
  readonly requestTimeoutMs: number;
  readonly isLeader: () => boolean;
}

interface Written {
  readonly key: string;
  readonly resourceVersion: string | undefined;
}

export class GatewayController {
  readonly #options: GatewayControllerOptions;
  readonly #log: Logger;
  readonly #cancel = new AbortController();
  readonly #call;
  readonly #watches: GatewayWatches;
  readonly #loop: WorkLoop;
  readonly #passes: PassMetrics;
  readonly #ownWrites: OwnWrites<Written, GatewayWatches>;
  /** What was last said about a Gateway this process does not serve, so it is said once. */
  #idleReason: string | undefined;

  constructor(options: GatewayControllerOptions) {
    this.#options = options;
    this.#log = options.process.log.child({ gateway: `${options.namespace}/${options.gateway}` });
    this.#call = boundedCall(this.#cancel.signal, options.requestTimeoutMs);
    this.#passes = gatewayPassMetrics(options.process.registry);
    this.#loop = new WorkLoop({
      reconcile: () => this.#timedPass(),
      onError: (err, retryInMs) =>
        this.#log.warn({ error: describeError(err), retryInMs }, 'gateway pass failed; retrying'),
      resyncMs: options.resyncMs,
      maxBackoffMs: WORK_MAX_BACKOFF_MS,
    });
    this.#ownWrites = new OwnWrites<Written, GatewayWatches>({
      maxWaitMs: OWN_WRITES_WAIT_MS,
      objectOf: (written) => written.key,
      shown: (written, watches) => showsResourceVersion(cachedVersion(watches, written.key), written.resourceVersion),
    });
    this.#watches = new GatewayWatches({
      clients: options.clients,
      namespace: options.namespace,
      gateway: options.gateway,
      callOptions: this.#call,
      onChange: () => this.#loop.trigger(),
      onRestarted: () => this.#loop.retryNow(),
      log: this.#log,
    });
    void this.#watches.synced.then(() => this.#loop.start());
  }

  /** Leadership changed: a new leader writes at once. */
  leadershipChanged(): void {
    this.#loop.trigger();
  }

  async stop(): Promise<void> {
    this.#cancel.abort();
    await this.#loop.stop();
    await this.#watches.stop();
  }

  async #timedPass(): Promise<{ requeueAfterMs?: number } | undefined> {
    const done = this.#passes.pass();
    try {
      const result = await this.#reconcile();
      done('success');
      return result;
    } catch (err) {
      done('error');
      throw err;
    }
  }

  async #reconcile(): Promise<{ requeueAfterMs?: number } | undefined> {
    const gateway = this.#watches.gateway();
    const gatewayClass = gateway === undefined ? undefined : this.#watches.gatewayClass(gateway.spec.gatewayClassName);
    const idle = idleReason(this.#options, gateway, gatewayClass?.spec.controllerName);
    if (idle !== undefined) {
      if (idle !== this.#idleReason) this.#log.warn({ reason: idle }, 'serving nothing');
      this.#idleReason = idle;
      await this.#options.process.applyConfig({ listeners: [] });
      this.#options.process.setReady(true);
      return await this.#writeStatuses(() =>
        routeStatusWrites(
          forgetGateway(this.#watches.routes(), this.#options.namespace, this.#options.gateway),
          (kind) => this.#watches.routeVersion(kind),
        ),
      );
    }
    this.#idleReason = undefined;
    const plan = await this.#serve(gateway!);
    this.#options.process.setReady(true);
    return await this.#writeStatuses(() =>
      statusWrites(gateway!, gatewayClass!, plan, (kind) => this.#watches.routeVersion(kind), formatTime(new Date())),
    );
  }

  /** The leader writes, once the caches show its previous writes (else it would write them again). */
  async #writeStatuses(writes: () => StatusWrite[]): Promise<{ requeueAfterMs?: number } | undefined> {
    if (!this.#options.isLeader()) return undefined;
    const waitMs = this.#ownWrites.waitMs(this.#watches, Date.now());
    if (waitMs > 0) return { requeueAfterMs: waitMs };
    for (const write of writes()) await this.#write(write);
    return undefined;
  }

  /** Plans and applies; a listener whose port will not bind is planned again as unavailable. */
  async #serve(gateway: Gateway): Promise<GatewayPlan> {
    const unbindable = new Map<string, string>();
    for (;;) {
      const plan = planGateway({
        gateway,
        routes: this.#watches.routes(),
        services: this.#watches.services(),
        grants: this.#watches.grants(),
        namespaceLabels: this.#watches.namespaceLabels(),
        addresses: this.#addresses(),
        listenHost: this.#options.listenHost,
        reservedPorts: this.#options.reservedPorts,
        unbindable,
        now: formatTime(new Date()),
      });
      try {
        if (await this.#options.process.applyConfig(plan.config)) {
          this.#log.info({ listeners: plan.config.listeners.map(describeListener) }, 'serving');
        }
        return plan;
      } catch (err) {
        const listener = err instanceof BindError ? plan.servedBy.get(err.listener) : undefined;
        if (listener === undefined || unbindable.has(listener)) throw err;
        unbindable.set(listener, `port cannot be bound here: ${(err as Error).message}`);
        this.#log.warn(
          { listener, error: (err as Error).message },
          'a listener port cannot be bound; serving the others',
        );
      }
    }
  }

  #addresses(): GatewayAddress[] {
    const { service, namespace, addresses, listenHost } = this.#options;
    if (service !== undefined) return serviceAddresses(this.#watches.services().get(`${namespace}/${service}`));
    return hostAddresses(addresses, listenHost);
  }

  async #write(write: StatusWrite): Promise<void> {
    try {
      const resourceVersion = await writeStatus(write, this.#options.clients, this.#call);
      this.#ownWrites.record({ key: writtenKey(write), resourceVersion }, Date.now());
      this.#log.debug({ write: describeWrite(write) }, 'status written');
    } catch (err) {
      throw new Error(`${describeWrite(write)}: ${describeError(err)}`, { cause: err });
    }
  }
}

/** canary_l4_gateway_reconcile_total and _duration_seconds. */
export function gatewayPassMetrics(registry: Registry): PassMetrics {
  return new PassMetrics({
    registry,
    prefix: `${METRIC_PREFIX}gateway_`,
    passesHelp: 'Passes of the gateway control loop, by result',
    durationHelp: 'Duration of a gateway control-loop pass',
  });
}

function idleReason(
  options: GatewayControllerOptions,
  gateway: Gateway | undefined,
  controllerName: string | undefined,
): string | undefined {
  const name = `Gateway ${options.namespace}/${options.gateway}`;
  if (gateway === undefined) return `${name} does not exist (yet); its listeners open once it does`;
  if (gateway.metadata.deletionTimestamp !== undefined) return `${name} is being deleted`;
  if (controllerName === undefined)
    return `${name} names GatewayClass ${gateway.spec.gatewayClassName}, which does not exist: create it with spec.controllerName ${GATEWAY_CONTROLLER_NAME}`;
  if (controllerName !== GATEWAY_CONTROLLER_NAME)
    return `${name} is of GatewayClass ${gateway.spec.gatewayClassName}, whose controller is ${controllerName}, not ${GATEWAY_CONTROLLER_NAME}`;
  return undefined;
}

function writtenKey(write: StatusWrite): string {
  return write.kind === 'GatewayClass'
    ? `GatewayClass//${write.name}`
    : `${write.kind}/${write.namespace}/${write.name}`;
}

function cachedVersion(watches: GatewayWatches, key: string): string | undefined {
  const [kind, namespace, name] = key.split('/') as [string, string, string];
  if (kind === 'GatewayClass') return watches.gatewayClass(name)?.metadata.resourceVersion;
  if (kind === 'Gateway') return watches.gateway()?.metadata.resourceVersion;
  return watches.routes().find((r) => r.kind === kind && r.metadata.namespace === namespace && r.metadata.name === name)
    ?.metadata.resourceVersion;
}

function describeListener(listener: L4Config['listeners'][number]): string {
  const backends = listener.backends
    .map((b) => `${b.name}=${b.weight}${b.refuse === true ? '(refused)' : ''}`)
    .join(',');
  return `${listener.name} ${listener.protocol}/${listener.listen.port} → ${backends}`;
}
