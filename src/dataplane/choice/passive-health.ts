// Passive health, as nginx's max_fails / fail_timeout: `maxFails` connect failures within
// `failTimeoutMs` take a backend out of rotation for `failTimeoutMs`; a success clears the count
// (and ends a take-out). With recovery probes (probeIntervalMs), a failed one keeps it out longer.

export class BackendHealth {
  #fails = 0;
  #firstFailAt = 0;
  #failedUntil = 0;

  isAvailable(now: number): boolean {
    return now >= this.#failedUntil;
  }

  /** Whether this failure took the backend out of rotation (it was in). */
  recordFailure(now: number, maxFails: number, failTimeoutMs: number): boolean {
    const wasAvailable = this.isAvailable(now);
    if (now - this.#firstFailAt > failTimeoutMs) {
      this.#fails = 0;
      this.#firstFailAt = now;
    }
    this.#fails++;
    if (this.#fails >= maxFails) {
      this.#failedUntil = now + failTimeoutMs;
      this.#fails = 0;
    }
    return wasAvailable && !this.isAvailable(now);
  }

  /** A recovery probe failed while out: out for another `failTimeoutMs` from now. */
  extendTakeOut(now: number, failTimeoutMs: number): void {
    this.#failedUntil = Math.max(this.#failedUntil, now + failTimeoutMs);
  }

  recordSuccess(): void {
    this.#fails = 0;
    this.#failedUntil = 0;
  }
}
