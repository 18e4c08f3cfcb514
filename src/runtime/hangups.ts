// SIGHUP's default action ends the process. The CLI imports this module before anything else, so a
// SIGHUP that arrives while the rest loads or the first config is applied is held instead of
// fatal: `serve` takes any number of them as one reload once it serves; every other mode (the
// `--workers` processes, whose primary reloads for them; `proxy`; `demo`) ignores them.

let held = false;
let handler: (() => void) | undefined;

process.on('SIGHUP', () => {
  if (handler === undefined) held = true;
  else handler();
});

/** From now on SIGHUP calls `onHangup`; one held from start-up, however many, calls it once now. */
export function handleHangups(onHangup: () => void): void {
  handler = onHangup;
  if (held) {
    held = false;
    onHangup();
  }
}
