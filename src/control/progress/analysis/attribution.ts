// Where the attempts a side failed without serving them count: the connections passive health
// held it out of, and its failed connects, under the signal the user gates on. Pure.

import type { PooledSide } from '../../../api/status-types.ts';

/**
 * A side's counts with the attempts it failed without serving them put where the user gates: the
 * connections its weight offered it while passive health held it out, and (when the user gates on
 * resetRate alone) its failed connects, whose clients were failed over. What failed connects took
 * it out counts for connectErrorRate, what resets before the first byte took it out for resetRate;
 * for the other one when only that one is gated; UDP flows held out are flows not replied. A
 * connect the backend reset before it completed is a reset when resetRate is gated (the user's word
 * for it), a connect error otherwise.
 * `heldOutIn` is how many of each signal's bad events were held-out ones.
 */
export function attributed(
  side: PooledSide,
  thresholds: Readonly<Record<string, unknown>>,
): { side: PooledSide; heldOutIn: Readonly<Record<string, number>> } {
  const gatedConnect = thresholds.connectErrorRate !== undefined;
  const gatedReset = thresholds.resetRate !== undefined;
  const connectToReset = gatedReset && !gatedConnect;
  const resetToConnect = gatedConnect && !gatedReset;
  const held = side.heldOut ?? 0;
  const heldResets = side.heldOutResets ?? 0;
  const udpHeld = side.udpHeldOut ?? 0;
  const asConnects = (connectToReset ? 0 : held) + (resetToConnect ? heldResets : 0);
  // With resetRate alone, every failed connect moves there below; with both, the resets among them do.
  const connectResets = gatedReset && gatedConnect ? (side.connectResets ?? 0) : 0;
  const asResets = (resetToConnect ? 0 : heldResets) + (connectToReset ? held + side.errors : connectResets);
  return {
    side: {
      ...side,
      attempts: side.attempts + asConnects,
      errors: side.errors + asConnects - connectResets,
      established: side.established + asResets,
      resets: side.resets + asResets,
      udpSessions: side.udpSessions + udpHeld,
    },
    heldOutIn: {
      connectErrorRate: (connectToReset ? 0 : held) + (resetToConnect ? heldResets : 0),
      resetRate: (resetToConnect ? 0 : heldResets) + (connectToReset ? held : 0),
      udpReplyRate: udpHeld,
    },
  };
}
