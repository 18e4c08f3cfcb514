// What `kubectl canary-l4 status` and `plan` print. Pure: objects in, text out.

import type { V1Service } from '@kubernetes/client-node';
import type { ReleasePlan } from '../control/index.ts';
import { formatSelector } from '../api/labels.ts';
import type { CanaryRelease } from '../api/release-types.ts';
import { formatStep } from '../api/steps.ts';
import type { CanaryReleaseSpec, StepSpec } from '../api/spec-types.ts';
import type { SignalCounts, StepAchievedSplit } from '../api/status-types.ts';
import { formatTable } from '../util/text-table.ts';

function since(at: string | undefined, now: Date): string {
  if (at === undefined) return '';
  const seconds = Math.max(0, Math.round((now.getTime() - Date.parse(at)) / 1000));
  const text =
    seconds < 120
      ? `${seconds}s`
      : seconds < 7200
        ? `${Math.floor(seconds / 60)}m${seconds % 60}s`
        : `${Math.floor(seconds / 3600)}h${Math.floor((seconds % 3600) / 60)}m`;
  return `${at} (${text} ago)`;
}

/** `10%`, `0% mirror 50%`. */
const stepLabel = (step: StepSpec) =>
  `${step.weight ?? 0}%${step.mirror === undefined ? '' : ` mirror ${step.mirror}%`}`;

const value = (number: number | null | undefined) => (number === null || number === undefined ? '-' : String(number));

/** The canary's share since the step in force began, e.g. `49.6% (251 of 506)`; `none yet` before
 * an interval served at its weight throughout is counted; `-` when status has none for that step. */
function stepShare(split: StepAchievedSplit | undefined, currentStep: number | undefined): string {
  if (split === undefined || split.step !== currentStep) return '-';
  const total = split.stable + split.canary;
  return total === 0 ? 'none yet' : `${split.canaryPercent}% (${split.canary} of ${total})`;
}

/** A table per Service port (configured, served, achieved), the step, the last analysis, the conditions. */
export function formatStatus(release: CanaryRelease, now: Date): string {
  const status = release.status ?? {};
  const spec = release.spec ?? {};
  const lines = [
    `CanaryRelease ${release.metadata.namespace ?? 'default'}/${release.metadata.name}: ${status.phase ?? 'not started (no status yet)'}`,
  ];
  const transition = status.transition;
  if (transition != null) lines.push(`Transition: ${transition.type} (${transition.reason}): ${transition.message}`);
  if ((spec.steps ?? []).length > 0) {
    lines.push(
      `Step: ${status.step ?? '-'}, started ${since(status.stepStartedAt, now) || '-'}${spec.paused === true ? ', paused (spec.paused)' : ''}`,
    );
    lines.push(`Steps: ${stepsLine(spec, status.currentStep)}`);
  }
  if (status.pause != null) lines.push(`Pause: ${status.pause.reason}, since ${since(status.pause.since, now)}`);
  lines.push('');
  const ports = status.ports ?? [];
  // With steps, the split since the step in force began beside the release's (which counts from its start).
  const stepColumn = (spec.steps ?? []).length > 0;
  if (ports.length === 0) lines.push('Ports: none through the proxy (not taken over yet, or handed back)');
  else
    lines.push(
      formatTable(
        [
          'SERVICE',
          'PORT',
          'PROXY PORT',
          'CONFIGURED',
          'SERVED',
          'ACHIEVED STABLE',
          'ACHIEVED CANARY',
          'CANARY %',
          ...(stepColumn ? ['THIS STEP'] : []),
        ],
        ports.map((port) => [
          port.service,
          `${port.port}/${port.protocol}`,
          String(port.proxyPort),
          `${port.weight}%${port.override == null ? '' : ` (--weight ${port.override}%)`}`,
          port.served === undefined ? '-' : `${port.served}%`,
          value(port.achieved?.stable),
          value(port.achieved?.canary),
          port.achieved === undefined ? '-' : `${port.achieved.canaryPercent}%`,
          ...(stepColumn ? [stepShare(port.achievedStep, status.currentStep)] : []),
        ]),
      ),
    );
  const mirrored = ports.flatMap(({ service, port, protocol, mirror }) =>
    mirror === undefined
      ? []
      : [
          [
            service,
            `${port}/${protocol}`,
            ...[mirror.mirrored, mirror.compared, mirror.equal, mirror.different, mirror.missing, mirror.dropped].map(
              String,
            ),
          ],
        ],
  );
  if (mirrored.length > 0) {
    lines.push('', 'Mirrored to the canary (its replies reach no client), since the release began:');
    lines.push(
      formatTable(['SERVICE', 'PORT', 'MIRRORED', 'COMPARED', 'EQUAL', 'DIFFERENT', 'MISSING', 'DROPPED'], mirrored),
    );
  }
  const analysis = status.analysis;
  if (analysis !== undefined) {
    // One sample count: the one judged, which the message and the table give (every interval pooled
    // since the last decisive one), never status.analysis.samples beside it (the last interval's alone).
    lines.push('');
    lines.push(
      `Analysis: ${analysis.verdict} at ${analysis.at}, ${analysis.replicas} replica(s), ${analysis.failures} failed in a row${spec.analysis?.failureLimit === undefined ? '' : ` (limit ${spec.analysis.failureLimit})`}: ${analysis.message}`,
    );
    if (analysis.signals.length > 0) {
      // The counts judged (every interval since the last decisive one), then the rate they make.
      const side = (counts: SignalCounts | null | undefined, rate: number | null | undefined) =>
        counts == null ? value(rate) : `${counts.count} of ${counts.of} (${value(rate)})`;
      const confidence =
        analysis.confidence === undefined ? '' : ` (${Math.round(analysis.confidence * 1000) / 10} % confidence)`;
      lines.push(
        formatTable(
          ['SIGNAL', 'CANARY', 'STABLE', 'THRESHOLD', 'VERDICT'],
          analysis.signals.map((signal) => [
            signal.name,
            side(signal.counts?.canary, signal.canary) +
              (signal.heldOut === undefined ? '' : `, ${signal.heldOut} held out`),
            side(signal.counts?.stable, signal.stable),
            `${signal.threshold}${confidence}`,
            signal.verdict,
          ]),
        ),
      );
    }
  }
  lines.push('');
  lines.push(
    formatTable(
      ['CONDITION', 'STATUS', 'REASON', 'MESSAGE'],
      (status.conditions ?? []).map((condition) => [
        condition.type,
        condition.status,
        condition.reason,
        condition.message,
      ]),
    ),
  );
  return `${lines.join('\n')}\n`;
}

/** `5% 2m → [50% until promoted] → adopted`: each step's weight and pause, the current one in brackets. */
function stepsLine(spec: CanaryReleaseSpec, current: number | undefined): string {
  const steps = (spec.steps ?? []).map(
    (step, index) =>
      `${index === current ? '[' : ''}${stepLabel(step)}${step.pause === undefined ? '' : ` ${step.pause.duration ?? 'until promoted'}`}${index === current ? ']' : ''}`,
  );
  return `${steps.join(' → ')}${spec.autoAdopt === false ? ' (then holds: autoAdopt false)' : ' → adopted'}`;
}

/** What spec.promotedStep releases: the pauses (and analysis gates) it skips, or that it is out of range. */
function promotionLine(spec: CanaryReleaseSpec): string | undefined {
  const steps = spec.steps ?? [];
  const promoted = spec.promotedStep;
  if (promoted === undefined || steps.length === 0) return undefined;
  if (!Number.isInteger(promoted) || promoted < 0 || promoted >= steps.length)
    return `spec.promotedStep ${promoted} names no step (indexes 0–${steps.length - 1} name steps 1–${steps.length}): it would skip every pause and analysis gate (see Problems)`;
  const gate = spec.analysis === undefined ? '' : ' and analysis gate';
  const skipped = steps
    .slice(0, promoted + 1)
    .map(
      (step, index) =>
        `step ${index + 1}/${steps.length} (${step.pause === undefined ? 'no pause' : (step.pause.duration ?? 'until promoted')})`,
    );
  return `spec.promotedStep ${promoted} is step ${formatStep(promoted, steps.length)}: the pause${gate} of ${skipped.join(', ')} ${skipped.length === 1 ? 'is' : 'are'} skipped`;
}

const portsOf = (service: V1Service) =>
  (service.spec?.ports ?? [])
    .map((port) => `${port.port}/${port.protocol ?? 'TCP'}→${port.targetPort ?? port.port}`)
    .join(', ');

/** The dry run of `release` (at `where` in the file): what would be created and changed, its steps, and what would hold it. */
export function formatPlan(release: CanaryRelease, namespace: string, plan: ReleasePlan, where: string): string {
  const spec = release.spec ?? {};
  const lines = [
    `CanaryRelease ${namespace}/${release.metadata.name} (${where}): a dry run against the cluster as it is now; nothing was changed.`,
  ];
  const section = (title: string, body: string[]) => {
    if (body.length > 0) lines.push('', title, ...body);
  };
  const promotion = promotionLine(spec);
  section(
    'Steps (every listed port takes each weight in turn; a pause holds it):',
    (spec.steps ?? []).length === 0
      ? []
      : [`  ${stepsLine(spec, release.status?.currentStep)}`, ...(promotion === undefined ? [] : [`  ${promotion}`])],
  );
  section(
    'Services to create:',
    plan.creates.map(
      (service) =>
        `  ${service.metadata?.name}: selector ${formatSelector(service.spec?.selector ?? {})}; ports ${portsOf(service)}`,
    ),
  );
  section(
    'Services to update (copies that differ from what the release wants):',
    plan.updates.map(
      (service) =>
        `  ${service.metadata?.name}: selector ${formatSelector(service.spec?.selector ?? {})}; ports ${portsOf(service)}`,
    ),
  );
  section(
    `Services to take over (what changes, once ${plan.inPod ? 'a proxy pod carrying the labels below is Ready' : 'the proxy listens'}):`,
    plan.originals.flatMap((change) => [
      `  ${change.service}: selector ${formatSelector(change.selector.before)} → ${formatSelector(change.selector.after)}`,
      ...change.ports.map((port) => {
        const before = port.targetPort.before ?? port.port;
        const after = port.targetPort.after ?? port.port;
        return `    port ${port.name === undefined ? '' : `${port.name} `}${port.port}/${port.protocol}: targetPort ${before === after ? `${before} (kept)` : `${before} → ${after}`}`;
      }),
    ]),
  );
  section(
    "Proxy pods (the manager gives them these; a re-apply of a Service then selects the app's own pods until the proxy takes it back):",
    plan.takeover === undefined || plan.originals.length === 0
      ? []
      : [
          `  labels ${plan.takeover.keys.map((key) => `${key}=${plan.takeover?.value}`).join(',')}`,
          ...plan.takeover.namedPorts.map((port) => `  port ${port.name}: ${port.containerPort}/${port.protocol}`),
          ...plan.takeover.movedPorts.map((moved) => `  targetPort moved: ${moved}`),
        ],
  );
  if (plan.proxyPorts.length > 0) {
    lines.push(
      '',
      'Proxy ports:',
      formatTable(
        ['  SERVICE', 'PORT', 'PROXY PORT', 'CANARY WEIGHT'],
        plan.proxyPorts.map((port) => [
          `  ${port.service}`,
          `${port.port}/${port.protocol}`,
          String(port.proxyPort),
          `${port.weight}%`,
        ]),
      ),
    );
  }
  section(
    'Deployments to create:',
    plan.deployments.map(
      (deployment) =>
        `  ${deployment.metadata?.name}: ${deployment.spec?.replicas ?? 1} replica(s), image ${deployment.spec?.template.spec?.containers.map((container) => container.image).join(', ')}`,
    ),
  );
  section(
    'Problems (the release holds, changing nothing, until they are fixed):',
    plan.problems.map((problem) => `  - ${problem}`),
  );
  section(
    'Waiting (the release changes nothing until then):',
    plan.waiting.map((item) => `  - ${item}`),
  );
  section(
    'Notes:',
    plan.notes.map((note) => `  - ${note}`),
  );
  if (plan.problems.length === 0) {
    lines.push(
      '',
      plan.waiting.length === 0
        ? 'No problems: applied as it is, the release would start.'
        : 'No problems, but applied now the release would wait, as above.',
    );
  }
  return `${lines.join('\n')}\n`;
}
