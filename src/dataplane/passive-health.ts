// Passive health, as nginx's max_fails / fail_timeout: `maxFails` connect failures within
// `failTimeoutMs` take a backend out of rotation for `failTimeoutMs`; a success clears the count.

export class BackendHealth {
  #fails = 0;
  #firstFailAt = 0;
  #failedUntil = 0;

  isAvailable(now: number): boolean {
    return now >= this.#failedUntil;
  }

  recordFailure(now: number, maxFails: number, failTimeoutMs: number): void {
    if (now - this.#firstFailAt > failTimeoutMs) {
      this.#fails = 0;
      this.#firstFailAt = now;
    }
    this.#fails++;
    if (this.#fails >= maxFails) {
      this.#failedUntil = now + failTimeoutMs;
      this.#fails = 0;
    }
  }

  recordSuccess(): void {
    this.#fails = 0;
    this.#failedUntil = 0;
  }
}
