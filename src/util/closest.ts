// What a typo most likely meant: the closest of the known spellings, for every "did you mean" of the
// house (a config key, a flag, a command, a CanaryRelease field, a container a patch names).

/** The known key a typo most likely meant, ignoring case, "_" and "-" (idle_timeout_ms); also a flag's. */
export function closestKey(key: string, knownKeys: readonly string[]): string | undefined {
  const typed = looseForm(key);
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const known of knownKeys) {
    const distance = editDistance(typed, looseForm(known));
    if (distance < bestDistance && distance <= Math.max(1, Math.floor(known.length / 3))) {
      best = known;
      bestDistance = distance;
    }
  }
  return best;
}

function looseForm(key: string): string {
  return key.toLowerCase().replace(/[-_]/g, '');
}

/** Levenshtein distance where swapping two neighbours counts as one edit (optimal string alignment). */
function editDistance(a: string, b: string): number {
  let beforePrevious: number[] = [];
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitution = (previous[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1);
      let best = Math.min((previous[j] ?? 0) + 1, (current[j - 1] ?? 0) + 1, substitution);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        best = Math.min(best, (beforePrevious[j - 2] ?? 0) + 1);
      }
      current.push(best);
    }
    beforePrevious = previous;
    previous = current;
  }
  return previous[b.length] ?? 0;
}
