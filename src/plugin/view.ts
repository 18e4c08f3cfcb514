// What `kubectl canary-l4 status` and `plan` print. Pure: objects in, text out.

import type { V1Service } from '@kubernetes/client-node';
import type { ReleasePlan } from '../control/index.ts';
import { formatSelector } from '../api/labels.ts';
import type { CanaryRelease } from '../api/types.ts';
import { formatTable } from '../util/text-table.ts';

function since(at: string | undefined, now: Date): string {
  if (at === undefined) return '';
  const seconds = Math.max(0, Math.round((now.getTime() - Date.parse(at)) / 1000));
  const text = seconds < 120 ? `${seconds}s` : seconds < 7200 ? `${Math.floor(seconds / 60)}m${seconds % 60}s` : `${Math.floor(seconds / 3600)}h${Math.floor((seconds % 3600) / 60)}m`;
  return `${at} (${text} ago)`;
}

const value = (number: number | null | undefined) => (number === null || number === undefined ? '-' : String(number));

/** A table per Service port (configured, served, achieved), the step, the last analysis, the conditions. */
export function formatStatus(release: CanaryRelease, now: Date): string {
  const status = release.status ?? {};
  const spec = release.spec ?? {};
  const lines = [`CanaryRelease ${release.metadata.namespace ?? 'default'}/${release.metadata.name}: ${status.phase ?? 'not started (no status yet)'}`];
  const transition = status.transition;
  if (transition != null) lines.push(`Transition: ${transition.type} (${transition.reason}): ${transition.message}`);
  const steps = spec.steps ?? [];
  if (steps.length > 0) {
    const plan = steps.map((step, index) => `${index === status.currentStep ? '[' : ''}${step.weight}%${step.pause === undefined ? '' : ` ${step.pause.duration ?? 'until promoted'}`}${index === status.currentStep ? ']' : ''}`).join(' → ');
    lines.push(`Step: ${status.step ?? '-'}, started ${since(status.stepStartedAt, now) || '-'}${spec.paused === true ? ', paused (spec.paused)' : ''}`);
    lines.push(`Steps: ${plan}${spec.autoAdopt === false ? ' (then holds: autoAdopt false)' : ' → adopted'}`);
  }
  if (status.pause != null) lines.push(`Pause: ${status.pause.reason}, since ${since(status.pause.since, now)}`);
  lines.push('');
  const ports = status.ports ?? [];
  if (ports.length === 0) lines.push('Ports: none through the proxy (not taken over yet, or handed back)');
  else lines.push(formatTable(['SERVICE', 'PORT', 'PROXY PORT', 'CONFIGURED', 'SERVED', 'ACHIEVED STABLE', 'ACHIEVED CANARY', 'CANARY %'],
    ports.map((port) => [
      port.service, `${port.port}/${port.protocol}`, String(port.proxyPort),
      `${port.weight}%${port.override === null ? '' : ` (--weight ${port.override}%)`}`, port.served === undefined ? '-' : `${port.served}%`,
      value(port.achieved?.stable), value(port.achieved?.canary), port.achieved === undefined ? '-' : `${port.achieved.canaryPercent}%`,
    ])));
  const analysis = status.analysis;
  if (analysis !== undefined) {
    lines.push('');
    lines.push(`Analysis: ${analysis.verdict} at ${analysis.at}, ${analysis.samples} canary samples, ${analysis.replicas} replica(s), ${analysis.failures} failed in a row${spec.analysis?.failureLimit === undefined ? '' : ` (limit ${spec.analysis.failureLimit})`}: ${analysis.message}`);
    if (analysis.signals.length > 0) {
      lines.push(formatTable(['SIGNAL', 'CANARY', 'STABLE', 'THRESHOLD', 'VERDICT'],
        analysis.signals.map((signal) => [signal.name, value(signal.canary), value(signal.stable), signal.threshold, signal.verdict])));
    }
  }
  lines.push('');
  lines.push(formatTable(['CONDITION', 'STATUS', 'REASON', 'MESSAGE'],
    (status.conditions ?? []).map((condition) => [condition.type, condition.status, condition.reason, condition.message])));
  return `${lines.join('\n')}\n`;
}

const portsOf = (service: V1Service) => (service.spec?.ports ?? []).map((port) => `${port.port}/${port.protocol ?? 'TCP'}→${port.targetPort ?? port.port}`).join(', ');

/** The dry run: what would be created and changed, and what would hold the release. */
export function formatPlan(name: string, namespace: string, plan: ReleasePlan): string {
  const lines = [`CanaryRelease ${namespace}/${name}: a dry run against the cluster as it is now; nothing was changed.`];
  const section = (title: string, body: string[]) => {
    if (body.length > 0) lines.push('', title, ...body);
  };
  section('Services to create:', plan.creates.map((service) => `  ${service.metadata?.name}: selector ${formatSelector(service.spec?.selector ?? {})}; ports ${portsOf(service)}`));
  section('Services to update (copies that differ from what the release wants):', plan.updates.map((service) => `  ${service.metadata?.name}: selector ${formatSelector(service.spec?.selector ?? {})}; ports ${portsOf(service)}`));
  section(`Services to take over (what changes, once ${plan.inPod ? 'a proxy pod carrying the labels below is Ready' : 'the proxy listens'}):`, plan.originals.flatMap((change) => [
    `  ${change.service}: selector ${formatSelector(change.selector.before)} → ${formatSelector(change.selector.after)}`,
    ...change.ports.map((port) => {
      const before = port.targetPort.before ?? port.port;
      const after = port.targetPort.after ?? port.port;
      return `    port ${port.name === undefined ? '' : `${port.name} `}${port.port}/${port.protocol}: targetPort ${before === after ? `${before} (kept)` : `${before} → ${after}`}`;
    }),
  ]));
  section('Proxy pods (the manager gives them these; a re-apply of a Service then selects the app\'s own pods until the proxy takes it back):', plan.takeover === undefined || plan.originals.length === 0 ? [] : [
    `  labels ${plan.takeover.keys.map((key) => `${key}=${plan.takeover?.value}`).join(',')}`,
    ...plan.takeover.namedPorts.map((port) => `  port ${port.name}: ${port.containerPort}/${port.protocol}`),
    ...plan.takeover.movedPorts.map((moved) => `  targetPort moved: ${moved}`),
  ]);
  if (plan.proxyPorts.length > 0) {
    lines.push('', 'Proxy ports:', formatTable(['  SERVICE', 'PORT', 'PROXY PORT', 'CANARY WEIGHT'],
      plan.proxyPorts.map((port) => [`  ${port.service}`, `${port.port}/${port.protocol}`, String(port.proxyPort), `${port.weight}%`])));
  }
  section('Deployments to create:', plan.deployments.map((deployment) => `  ${deployment.metadata?.name}: ${deployment.spec?.replicas ?? 1} replica(s), image ${deployment.spec?.template.spec?.containers.map((container) => container.image).join(', ')}`));
  section('Problems (the release holds, changing nothing, until they are fixed):', plan.problems.map((problem) => `  - ${problem}`));
  section('Waiting (the release changes nothing until then):', plan.waiting.map((item) => `  - ${item}`));
  section('Notes:', plan.notes.map((note) => `  - ${note}`));
  if (plan.problems.length === 0) {
    lines.push('', plan.waiting.length === 0 ? 'No problems: applied as it is, the release would start.' : 'No problems, but applied now the release would wait, as above.');
  }
  return `${lines.join('\n')}\n`;
}
