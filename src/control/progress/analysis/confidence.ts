// Confidence bounds on counts, for the analysis: how high or how low a true rate can be, given
// `count` events in `of` trials, at a confidence. One-sided bounds throughout: a rate is judged
// beyond a threshold only when its lower bound is, within it only when its upper bound is. Pure.
//
// One rate: Clopper-Pearson's exact bounds (never anti-conservative, however few the trials: one
// failure in one attempt is no evidence at 99 %), with Wilson's score bounds once both the events
// and the non-events number at least WILSON_FROM, where the two agree and Wilson's is closed-form
// (so the exact sum never has more than WILSON_FROM terms).
// Two rates (canary − stable): the MOVER of Newcombe (1998, his method 10) on those bounds: the
// difference's bound from each side's own, so a stable side with thousands of samples is not
// confused with a canary with twenty.

import type { SignalCounts } from '../../../api/status-types.ts';

/** Counts of one side: `count` events in `of` trials. */
export type Counts = SignalCounts;

/** Where both the events and the rest reach this, Wilson's bounds replace the exact ones. */
const WILSON_FROM = 30;
const BISECTIONS = 48;

/** The standard normal quantile (Acklam's rational approximation, relative error < 1.2e-9). */
function normalQuantile(p: number): number {
  const a = [
    -39.69683028665376, 220.9460984245205, -275.9285104469687, 138.357751867269, -30.66479806614716, 2.506628277459239,
  ];
  const b = [-54.47609879822406, 161.5858368580409, -155.6989798598866, 66.80131188771972, -13.28068155288572];
  const c = [
    -0.007784894002430293, -0.3223964580411365, -2.400758277161838, -2.549732539343734, 4.374664141464968,
    2.938163982698783,
  ];
  const d = [0.007784695709041462, 0.3224671290700398, 2.445134137142996, 3.754408661907416];
  const tail = (q: number) =>
    (((((c[0]! * q + c[1]!) * q + c[2]!) * q + c[3]!) * q + c[4]!) * q + c[5]!) /
    ((((d[0]! * q + d[1]!) * q + d[2]!) * q + d[3]!) * q + 1);
  if (p < 0.02425) return tail(Math.sqrt(-2 * Math.log(p)));
  if (p > 1 - 0.02425) return -tail(Math.sqrt(-2 * Math.log(1 - p)));
  const q = p - 0.5;
  const r = q * q;
  return (
    ((((((a[0]! * r + a[1]!) * r + a[2]!) * r + a[3]!) * r + a[4]!) * r + a[5]!) * q) /
    (((((b[0]! * r + b[1]!) * r + b[2]!) * r + b[3]!) * r + b[4]!) * r + 1)
  );
}

/**
 * P(X ≤ k) for X ~ Binomial(n, p): the first term in logs, the next ones by their ratios (k is small
 * here: under WILSON_FROM). A first term that underflows leaves a sum too small to matter.
 */
function binomialCdf(k: number, n: number, p: number): number {
  if (p <= 0) return 1;
  if (p >= 1) return k >= n ? 1 : 0;
  const odds = p / (1 - p);
  let [term, sum] = [1, 1];
  for (let j = 0; j < k; j++) {
    term *= ((n - j) / (j + 1)) * odds;
    sum += term;
  }
  return Math.min(1, Math.exp(n * Math.log1p(-p)) * sum);
}

/** The p at which P(X ≤ k) = target, by bisection (the CDF falls as p grows). */
function solveCdf(k: number, n: number, target: number): number {
  let [low, high] = [0, 1];
  for (let step = 0; step < BISECTIONS; step++) {
    const middle = (low + high) / 2;
    if (binomialCdf(k, n, middle) > target) low = middle;
    else high = middle;
  }
  return (low + high) / 2;
}

/** Clopper-Pearson's one-sided bound on the rate of `count` events, the smaller side of count / rest. */
function exactBound(count: number, of: number, confidence: number, side: 'lower' | 'upper'): number {
  if (count > of - count) return 1 - exactBound(of - count, of, confidence, side === 'lower' ? 'upper' : 'lower');
  // lower: P(X ≥ count) = 1 − confidence, i.e. P(X ≤ count − 1) = confidence; upper: P(X ≤ count) = 1 − confidence.
  return side === 'lower' ? solveCdf(count - 1, of, confidence) : solveCdf(count, of, 1 - confidence);
}

function wilson(counts: Counts, z: number): number {
  const { count, of } = counts;
  const rate = count / of;
  const z2 = z * z;
  return (rate + z2 / (2 * of) + z * Math.sqrt((rate * (1 - rate)) / of + z2 / (4 * of * of))) / (1 + z2 / of);
}

const cache = new Map<string, number>();
const CACHE_MAX = 100_000;

/**
 * The lowest (`side` lower) or highest (`upper`) the true rate can be, at `confidence`, one-sided.
 * No trials: 0 and 1 (nothing is known).
 */
export function rateBound(counts: Counts, confidence: number, side: 'lower' | 'upper'): number {
  const { count, of } = counts;
  if (of <= 0) return side === 'lower' ? 0 : 1;
  if (side === 'lower' && count <= 0) return 0;
  if (side === 'upper' && count >= of) return 1;
  const key = `${count}/${of}/${confidence}/${side}`;
  const cached = cache.get(key);
  if (cached !== undefined) return cached;
  let bound: number;
  if (count >= WILSON_FROM && of - count >= WILSON_FROM) {
    const z = normalQuantile(confidence);
    bound = side === 'upper' ? wilson(counts, z) : 1 - wilson({ count: of - count, of }, z);
  } else {
    bound = exactBound(count, of, confidence, side);
  }
  if (cache.size >= CACHE_MAX) cache.clear();
  cache.set(key, bound);
  return bound;
}

/**
 * The lowest (`lower`) or highest (`upper`) the true difference canary − stable can be, at
 * `confidence`, one-sided (MOVER: each side's own bound, combined). Undefined without trials on a side.
 */
export function differenceBound(
  canary: Counts,
  stable: Counts,
  confidence: number,
  side: 'lower' | 'upper',
): number | undefined {
  if (canary.of <= 0 || stable.of <= 0) return undefined;
  const [canaryRate, stableRate] = [canary.count / canary.of, stable.count / stable.of];
  const difference = canaryRate - stableRate;
  if (side === 'lower') {
    return (
      difference -
      Math.hypot(
        canaryRate - rateBound(canary, confidence, 'lower'),
        rateBound(stable, confidence, 'upper') - stableRate,
      )
    );
  }
  return (
    difference +
    Math.hypot(rateBound(canary, confidence, 'upper') - canaryRate, stableRate - rateBound(stable, confidence, 'lower'))
  );
}
