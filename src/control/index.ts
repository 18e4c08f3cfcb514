// The control loop of `canary-l4 proxy`, as the rest of the house sees it: the controller a proxy
// runs, and the dry run `kubectl canary-l4 plan` shows (the controller's own planning, changing
// nothing). Everything else under control/ is the loop's own.
//
// The rooms, bottom to top (which room imports which is declared once, in biome.jsonc, and `npm run lint` checks it):
//   service/   the Service takeover and hand-back: selectors, saved originals, copies, proxy ports,
//              patches, and the L4 config the release serves
//   progress/  steps, analysis of each interval, the evidence collector, progress metrics
//   pass/      one reconcile pass: what it is given and returns, the world it reads, the status,
//              Events and refusals it reports, the replicas it speaks for
//   workload/  the canary Deployment of spec.workloads and what transitions do to it
//   release/   the release's phases: the plan of its Services, running, and the transitions
//   loop/      the loop around the pure reconcile: caches, applier, own writes, reporting
//   controller.ts, reconcile.ts, dry-run.ts — the loop itself, on top, with api-error-streak.ts (when a
//              persisting API error is said in status)

export { Controller, type ControllerOptions } from './controller.ts';
export { dryRun, type ReleasePlan } from './dry-run.ts';
export type { Observed } from './pass/desired.ts';
