// Medians, per-repetition ratios to nginx, the Markdown table and the JSON file.
// Ratios are taken inside one repetition because the machines are shared and absolute numbers drift.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ProxyVariant } from './proxies.ts';
import type { AnyWorkload, MetricSpec } from './workloads.ts';
import { RESULTS_DIR } from './paths.ts';

export interface Measurement {
  readonly repetition: number;
  readonly workload: string;
  readonly proxy: ProxyVariant;
  readonly values: Readonly<Record<string, number>>;
  readonly error?: string;
}

export const USAGE_METRICS: readonly MetricSpec[] = [
  { key: 'cpuPercent', label: 'proxy CPU', unit: '%', lowerIsBetter: true },
  { key: 'peakRssMiB', label: 'proxy peak RSS', unit: 'MiB', lowerIsBetter: true },
];

export const metricsOf = (workload: AnyWorkload): readonly MetricSpec[] =>
  workload.recordsUsage ? [...workload.metrics, ...USAGE_METRICS] : workload.metrics;

const BASELINE: ProxyVariant = 'nginx';

export interface Cell {
  readonly median: number | undefined;
  /** Median of value ÷ nginx's value in the same repetition. */
  readonly ratioToNginx: number | undefined;
  readonly samples: number;
  readonly errors: readonly string[];
}

export interface SummaryRow {
  readonly workload: string;
  readonly title: string;
  readonly metric: MetricSpec;
  readonly cells: Partial<Record<ProxyVariant, Cell>>;
}

export function median(values: readonly number[]): number | undefined {
  const sorted = values.filter(Number.isFinite).sort((a, b) => a - b);
  if (sorted.length === 0) return undefined;
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle] : ((sorted[middle - 1] ?? 0) + (sorted[middle] ?? 0)) / 2;
}

export function summarize(
  workloads: readonly AnyWorkload[],
  proxies: readonly ProxyVariant[],
  measurements: readonly Measurement[],
): SummaryRow[] {
  const rows: SummaryRow[] = [];
  for (const workload of workloads) {
    const ofWorkload = measurements.filter((m) => m.workload === workload.name);
    if (ofWorkload.length === 0) continue;
    const baselineByRepetition = new Map(
      ofWorkload.filter((m) => m.proxy === BASELINE && m.error === undefined).map((m) => [m.repetition, m]),
    );
    for (const metric of metricsOf(workload)) {
      const cells: Partial<Record<ProxyVariant, Cell>> = {};
      for (const proxy of proxies) {
        const runs = ofWorkload.filter((m) => m.proxy === proxy);
        if (runs.length === 0) continue;
        const succeeded = runs.filter((m) => m.error === undefined);
        const ratios = succeeded.flatMap((m) => {
          const baseline = baselineByRepetition.get(m.repetition)?.values[metric.key];
          const value = m.values[metric.key];
          return baseline === undefined || value === undefined || baseline === 0 ? [] : [value / baseline];
        });
        cells[proxy] = {
          median: median(succeeded.map((m) => m.values[metric.key] ?? Number.NaN)),
          ratioToNginx: median(ratios),
          samples: succeeded.length,
          errors: runs.flatMap((m) => (m.error === undefined ? [] : [m.error])),
        };
      }
      rows.push({ workload: workload.name, title: workload.title, metric, cells });
    }
  }
  return rows;
}

function formatNumber(value: number): string {
  const magnitude = Math.abs(value);
  const decimals = magnitude >= 100 ? 0 : magnitude >= 10 ? 1 : 2;
  return value.toLocaleString('en-US', { minimumFractionDigits: decimals, maximumFractionDigits: decimals });
}

export function markdownTable(
  heading: string,
  proxies: readonly ProxyVariant[],
  rows: readonly SummaryRow[],
  measurements: readonly Measurement[],
): string {
  const footnotes = new Map<string, number>();
  const footnote = (error: string): string => {
    const text = error.replace(/\s+/g, ' ').slice(0, 300);
    if (!footnotes.has(text)) footnotes.set(text, footnotes.size + 1);
    return `[${footnotes.get(text)}]`;
  };
  const renderCell = (cell: Cell | undefined, proxy: ProxyVariant): string => {
    if (cell === undefined) return '—';
    const failures =
      cell.errors.length === 0 ? '' : ` (${cell.errors.length} failed ${footnote(cell.errors[0] ?? '')})`;
    if (cell.median === undefined) return cell.errors.length > 0 ? `failed ${footnote(cell.errors[0] ?? '')}` : '—';
    const ratio = proxy !== BASELINE && cell.ratioToNginx !== undefined ? ` ×${cell.ratioToNginx.toFixed(2)}` : '';
    return `${formatNumber(cell.median)}${ratio}${failures}`;
  };
  const lines = [
    heading,
    '',
    'Median over repetitions; ×N = median of the per-repetition ratios to nginx (↓ = lower is better).',
    '',
    `| workload | metric | ${proxies.join(' | ')} |`,
    `|---|---|${proxies.map(() => '---:').join('|')}|`,
    ...rows.map((row) => {
      const unit = row.metric.unit === '' ? '' : ` (${row.metric.unit})`;
      const metric = `${row.metric.label}${unit}${row.metric.lowerIsBetter ? ' ↓' : ''}`;
      return `| ${row.title} | ${metric} | ${proxies.map((proxy) => renderCell(row.cells[proxy], proxy)).join(' | ')} |`;
    }),
  ];
  if (footnotes.size > 0) lines.push('', ...[...footnotes].map(([text, number]) => `[${number}] ${text}`));
  // A rate reached by failing fast is no rate: say where the load generator saw errors.
  const withErrors = measurements.filter((m) => (m.values.errors ?? 0) > 0);
  if (withErrors.length > 0) {
    lines.push(
      '',
      `Load generator errors: ${withErrors.map((m) => `${m.workload} · ${m.proxy} · repetition ${m.repetition + 1}: ${m.values.errors}`).join('; ')}`,
    );
  }
  return lines.join('\n');
}

export function writeResultsJson(report: object, startedAt: Date): string {
  mkdirSync(RESULTS_DIR, { recursive: true });
  const file = join(
    RESULTS_DIR,
    `${startedAt
      .toISOString()
      .replace(/:/g, '-')
      .replace(/\.\d+Z$/, 'Z')}.json`,
  );
  writeFileSync(file, `${JSON.stringify(report, null, 2)}\n`);
  return file;
}
