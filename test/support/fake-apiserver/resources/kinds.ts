/**
 * Per-kind behaviour that kube-apiserver's registries add on top of generic storage: defaulting
 * (Services, Pods, Deployments, Namespaces, CRDs; Events' times in whole seconds), Service IP/port
 * allocation, and the status a create starts with. Defaulting runs on every write, as the real
 * decoder does; allocation runs on create and is preserved on update.
 */
import { ApiError, errors } from '../wire/errors.ts';
import { IpAllocator, PortAllocator } from './ip-allocator.ts';
import { clone, deepEqual, isObject, type KObject } from '../wire/json.ts';
import type { ResourceType } from './registry.ts';

export class KindHooks {
  readonly ips: IpAllocator;
  readonly nodePorts = new PortAllocator();

  constructor(serviceCidr: string) {
    this.ips = new IpAllocator(serviceCidr);
  }

  /** Defaults applied to every create and update body (mutates `obj`). */
  applyDefaults(rt: ResourceType, obj: KObject): void {
    const spec = isObject(obj.spec) ? obj.spec : undefined;
    switch (`${rt.group}/${rt.plural}`) {
      case '/services': {
        if (!spec) {
          obj.spec = {};
          return this.applyDefaults(rt, obj);
        }
        spec.type ??= 'ClusterIP';
        spec.sessionAffinity ??= 'None';
        if (spec.type !== 'ExternalName') {
          spec.ipFamilies ??= ['IPv4'];
          spec.ipFamilyPolicy ??= 'SingleStack';
          spec.internalTrafficPolicy ??= 'Cluster';
        }
        if (spec.type === 'NodePort' || spec.type === 'LoadBalancer') spec.externalTrafficPolicy ??= 'Cluster';
        if (spec.type === 'LoadBalancer') spec.allocateLoadBalancerNodePorts ??= true;
        for (const p of (spec.ports ?? []) as KObject[]) {
          p.protocol ??= 'TCP';
          if (p.targetPort === undefined || p.targetPort === 0 || p.targetPort === '') p.targetPort = p.port;
        }
        break;
      }
      case '/pods': {
        if (!spec) return;
        spec.restartPolicy ??= 'Always';
        spec.dnsPolicy ??= 'ClusterFirst';
        spec.schedulerName ??= 'default-scheduler';
        spec.terminationGracePeriodSeconds ??= 30;
        spec.securityContext ??= {};
        spec.enableServiceLinks ??= true;
        for (const c of (spec.containers ?? []) as KObject[]) defaultContainer(c);
        break;
      }
      case 'apps/deployments':
      case 'apps/replicasets': {
        if (!spec) return;
        spec.replicas ??= 1;
        spec.revisionHistoryLimit ??= rt.plural === 'deployments' ? 10 : undefined;
        if (rt.plural === 'deployments') {
          spec.progressDeadlineSeconds ??= 600;
          // As apps/v1 SetDefaults_Deployment: an empty strategy (kubectl create's `strategy: {}`) too.
          spec.strategy = isObject(spec.strategy) ? spec.strategy : {};
          if (!spec.strategy.type) spec.strategy.type = 'RollingUpdate';
          if (spec.strategy.type === 'RollingUpdate') {
            const rollingUpdate = isObject(spec.strategy.rollingUpdate)
              ? spec.strategy.rollingUpdate
              : (spec.strategy.rollingUpdate = {});
            rollingUpdate.maxUnavailable ??= '25%';
            rollingUpdate.maxSurge ??= '25%';
          }
        }
        if (spec.revisionHistoryLimit === undefined) delete spec.revisionHistoryLimit;
        for (const c of (spec.template?.spec?.containers ?? []) as KObject[]) defaultContainer(c);
        break;
      }
      case '/events': {
        // metav1.Time is encoded in whole seconds: kube-apiserver drops the fraction a client sends
        // (client-node sends milliseconds), and kubectl --sort-by=.lastTimestamp lists nothing with one.
        for (const field of ['firstTimestamp', 'lastTimestamp'] as const) {
          if (typeof obj[field] === 'string') obj[field] = wholeSeconds(obj[field]);
        }
        break;
      }
      case '/namespaces': {
        obj.metadata.labels = { ...(obj.metadata.labels ?? {}), 'kubernetes.io/metadata.name': obj.metadata.name };
        obj.spec = { finalizers: ['kubernetes'], ...(spec ?? {}) };
        break;
      }
      case 'apiextensions.k8s.io/customresourcedefinitions': {
        if (!spec) return;
        spec.names ??= {};
        spec.names.singular ??= String(spec.names.kind ?? '').toLowerCase();
        spec.names.listKind ??= `${spec.names.kind}List`;
        spec.conversion ??= { strategy: 'None' };
        break;
      }
    }
  }

  /** The status a freshly created object starts with (status from the client is dropped). */
  initialStatus(rt: ResourceType, obj: KObject): unknown {
    switch (`${rt.group}/${rt.plural}`) {
      case '/services':
        return { loadBalancer: {} };
      case '/pods':
        return { phase: 'Pending', qosClass: 'BestEffort' };
      case '/namespaces':
        return { phase: 'Active' };
      case 'apps/deployments':
      case 'apps/replicasets':
        return {};
      case 'apiextensions.k8s.io/customresourcedefinitions': {
        const now = obj.metadata.creationTimestamp;
        const names = clone(obj.spec?.names ?? {});
        return {
          acceptedNames: names,
          conditions: [
            {
              type: 'NamesAccepted',
              status: 'True',
              reason: 'NoConflicts',
              message: 'no conflicts found',
              lastTransitionTime: now,
            },
            {
              type: 'Established',
              status: 'True',
              reason: 'InitialNamesAccepted',
              message: 'the initial names have been accepted',
              lastTransitionTime: now,
            },
          ],
          storedVersions: ((obj.spec?.versions ?? []) as KObject[]).filter((v) => v.storage).map((v) => v.name),
        };
      }
      default:
        return undefined;
    }
  }

  /** Allocate Service cluster IPs / node ports on create. Throws 422 for bad requested values. */
  allocate(rt: ResourceType, obj: KObject): void {
    if (rt.group !== '' || rt.plural !== 'services') return;
    const spec = obj.spec;
    const name = obj.metadata.name;
    const invalid = (field: string, message: string) => errors.invalid('', 'Service', name, [{ field, message }]);
    const claimed: string[] = [];
    const claimedPorts: number[] = [];
    try {
      if (spec.type === 'ExternalName') {
        delete spec.clusterIP;
        delete spec.clusterIPs;
      } else if (spec.clusterIP === 'None') {
        spec.clusterIPs = ['None'];
      } else if (spec.clusterIP) {
        const err = this.ips.claim(spec.clusterIP);
        if (err)
          throw invalid(
            'spec.clusterIPs',
            `Invalid value: ["${spec.clusterIP}"]: failed to allocate IP ${spec.clusterIP}: ${err}`,
          );
        claimed.push(spec.clusterIP);
        spec.clusterIPs = [spec.clusterIP];
      } else {
        let ip: string;
        try {
          ip = this.ips.allocate();
        } catch (e) {
          throw new ApiError(500, 'InternalError', `failed to allocate a serviceIP: ${(e as Error).message}`);
        }
        claimed.push(ip);
        spec.clusterIP = ip;
        spec.clusterIPs = [ip];
      }
      if (spec.type === 'NodePort' || spec.type === 'LoadBalancer') {
        for (const p of (spec.ports ?? []) as KObject[]) {
          if (p.nodePort) {
            const err = this.nodePorts.claim(p.nodePort);
            if (err) throw invalid('spec.ports[].nodePort', `Invalid value: ${p.nodePort}: ${err}`);
          } else p.nodePort = this.nodePorts.allocate();
          claimedPorts.push(p.nodePort);
        }
      }
    } catch (e) {
      for (const ip of claimed) this.ips.release(ip);
      for (const p of claimedPorts) this.nodePorts.release(p);
      throw e;
    }
  }

  /** On update, keep allocated values the client left out; reject changes to immutable ones. */
  preserveAllocations(rt: ResourceType, next: KObject, prev: KObject): void {
    if (rt.group !== '' || rt.plural !== 'services') return;
    const s = next.spec ?? (next.spec = {});
    const o = prev.spec ?? {};
    if (!s.clusterIP && o.clusterIP && s.type === o.type) s.clusterIP = o.clusterIP;
    if ((!s.clusterIPs || s.clusterIPs.length === 0) && o.clusterIPs && s.clusterIP === o.clusterIP)
      s.clusterIPs = o.clusterIPs;
    if (o.clusterIP && s.clusterIP !== o.clusterIP && s.type !== 'ExternalName' && o.type !== 'ExternalName') {
      throw errors.invalid('', 'Service', next.metadata.name, [
        {
          field: 'spec.clusterIPs[0]',
          message: `Invalid value: []string{"${s.clusterIP}"}: may not change once set`,
          reason: 'FieldValueInvalid',
        },
      ]);
    }
    for (const p of (s.ports ?? []) as KObject[]) {
      if (p.nodePort) continue;
      const old = ((o.ports ?? []) as KObject[]).find(
        (q) => q.port === p.port && (q.protocol ?? 'TCP') === (p.protocol ?? 'TCP'),
      );
      if (old?.nodePort && (s.type === 'NodePort' || s.type === 'LoadBalancer')) p.nodePort = old.nodePort;
    }
  }

  /**
   * What an update may not change, as kube-apiserver refuses it: a Pod's spec but for its
   * containers' images, activeDeadlineSeconds, tolerations, terminationGracePeriodSeconds, and
   * nodeName while unset (the scheduler's binding). A real control plane answered a test that
   * replaced a pod's container ports with this 422.
   */
  refuseImmutableChanges(rt: ResourceType, next: KObject, prev: KObject): void {
    if (rt.group !== '' || rt.plural !== 'pods') return;
    const fixed = (spec: KObject | undefined, bound: boolean): KObject => {
      const {
        activeDeadlineSeconds: _deadline,
        tolerations: _tolerations,
        terminationGracePeriodSeconds: _grace,
        nodeName,
        ...rest
      } = clone(spec ?? {});
      for (const list of ['containers', 'initContainers', 'ephemeralContainers'] as const) {
        if (Array.isArray(rest[list]))
          rest[list] = (rest[list] as KObject[]).map(({ image: _image, ...container }) => container);
      }
      return bound ? { ...rest, nodeName } : rest;
    };
    const wasBound = Boolean(prev.spec?.nodeName);
    if (deepEqual(fixed(next.spec, wasBound), fixed(prev.spec, wasBound))) return;
    throw errors.invalid('', 'Pod', next.metadata.name, [
      {
        field: 'spec',
        message:
          'Forbidden: pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,' +
          '`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)',
        reason: 'FieldValueForbidden',
      },
    ]);
  }

  /**
   * A Lease's acquireTime and renewTime are MicroTimes: RFC 3339 with exactly six fractional
   * digits, or kube-apiserver cannot decode the object (400). A real control plane refused a
   * renewTime with milliseconds (`new Date()`); client-node's V1MicroTime writes six.
   */
  refuseMalformedMicroTimes(rt: ResourceType, obj: KObject): void {
    if (rt.group !== 'coordination.k8s.io' || rt.plural !== 'leases') return;
    for (const field of ['acquireTime', 'renewTime'] as const) {
      const value: unknown = obj.spec?.[field];
      if (value === undefined || value === null) continue;
      const text = String(value);
      if (/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}(Z|[+-]\d\d:\d\d)$/.test(text)) continue;
      throw errors.badRequest(
        `Lease in version "v1" cannot be handled as a Lease: parsing time ${JSON.stringify(text)} as "2006-01-02T15:04:05.000000Z07:00": ` +
          `cannot parse ${JSON.stringify(text.slice(19))} as ".000000"`,
      );
    }
  }

  /** Release allocations when an object leaves the store. */
  release(rt: ResourceType, obj: KObject): void {
    if (rt.group !== '' || rt.plural !== 'services') return;
    for (const ip of (obj.spec?.clusterIPs ?? [obj.spec?.clusterIP]) as string[])
      if (ip && ip !== 'None') this.ips.release(ip);
    for (const p of (obj.spec?.ports ?? []) as KObject[]) if (p.nodePort) this.nodePorts.release(p.nodePort);
  }
}

/** An RFC 3339 time as metav1.Time encodes it: whole seconds, UTC (unchanged if it does not parse). */
function wholeSeconds(time: string): string {
  const ms = Date.parse(time);
  return Number.isNaN(ms) ? time : new Date(ms - (((ms % 1000) + 1000) % 1000)).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

function defaultContainer(c: KObject): void {
  const image = String(c.image ?? '');
  const tag = image.includes('@') ? 'digest' : (image.split('/').pop()?.split(':')[1] ?? 'latest');
  c.imagePullPolicy ??= tag === 'latest' ? 'Always' : 'IfNotPresent';
  c.terminationMessagePath ??= '/dev/termination-log';
  c.terminationMessagePolicy ??= 'File';
  c.resources ??= {};
  for (const p of (c.ports ?? []) as KObject[]) p.protocol ??= 'TCP';
}
