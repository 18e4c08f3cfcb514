// `npm run soak -- [--minutes N] [--seed S]`: the soak of test/soak/soak.ts, as long as asked; prints
// what it did and what the clients saw, and exits 1 if a connection failed outside the documented
// windows or the Service did not end exactly as it should.

import { parseArgs } from 'node:util';
import { runSoak } from './soak.ts';

const { values } = parseArgs({
  options: {
    minutes: { type: 'string', default: '1' },
    seed: { type: 'string' },
    quiet: { type: 'boolean', default: false },
  },
});
const minutes = Number(values.minutes);
if (!Number.isFinite(minutes) || minutes <= 0) {
  process.stderr.write(`soak: --minutes must be a number > 0, got ${values.minutes}\n`);
  process.exit(2);
}
const seed = values.seed === undefined ? Math.floor(Math.random() * 2 ** 31) : Number(values.seed);
process.stdout.write(`soak: ${minutes} min, seed ${seed} (replay with --seed ${seed})\n`);
const result = await runSoak({
  durationMs: minutes * 60_000,
  seed,
  log: values.quiet ? undefined : (line) => process.stdout.write(`  ${line}\n`),
});
process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
const ok = result.failuresOutside.length === 0 && result.serviceProblems.length === 0;
process.stdout.write(ok ? 'soak: passed\n' : 'soak: FAILED\n');
process.exit(ok ? 0 : 1);
