// The file descriptors the data plane may hold, shared by every listener. Past the process's
// RLIMIT_NOFILE the kernel refuses sockets: an accept then fails silently (libuv accepts and closes
// the connection), a backend connect or a UDP session's socket fails with EMFILE, and the admin
// server stops answering. So connections and sessions are refused here first, with a reason, well
// before that. Each listener holds its listening socket, and keeps a small reserve no other listener
// can take, so a flood on one (70 000 spoofed UDP flows) cannot starve the others. Pure: no I/O.

/** What a listener's new connection costs: the client's socket and the backend's. */
export const TCP_CONNECTION_DESCRIPTORS = 2;
/** A UDP session's own upstream socket (replies leave from the listening socket). */
export const UDP_SESSION_DESCRIPTORS = 1;
/** A mirror leg: its one upstream socket (TCP or UDP). */
export const MIRROR_LEG_DESCRIPTORS = 1;

export interface DescriptorBudgetOptions {
  /** Descriptors for listeners, connections and sessions (the limit less what the process keeps). */
  readonly capacity: number;
  /** The most a listener keeps for itself; less when capacity / (2 × listeners) is smaller. */
  readonly maxReservePerListener: number;
}

export class DescriptorBudget {
  readonly capacity: number;
  readonly #maxReserve: number;
  readonly #accounts = new Set<DescriptorAccount>();
  #inUse = 0;
  /** The reserve each open account keeps. */
  #reserve = 0;
  /** Sum over open accounts of the part of their reserve they do not use: nobody else may take it. */
  #unusedReserves = 0;

  constructor(options: DescriptorBudgetOptions) {
    this.capacity = options.capacity;
    this.#maxReserve = options.maxReservePerListener;
  }

  /** Descriptors held: listening sockets, connections and sessions. */
  get inUse(): number {
    return this.#inUse;
  }

  /** An account for a new listener, holding its listening socket already. */
  open(): DescriptorAccount {
    const account = new DescriptorAccount(this);
    this.#accounts.add(account);
    this.#inUse++;
    this.#rebalance();
    return account;
  }

  /** @internal for DescriptorAccount */
  tryTake(account: DescriptorAccount, count: number): boolean {
    const ownUnused = this.#unusedOf(account);
    if (this.#inUse + count > this.capacity - (this.#unusedReserves - ownUnused)) return false;
    this.#move(account, count);
    return true;
  }

  /** @internal for DescriptorAccount */
  give(account: DescriptorAccount, count: number): void {
    this.#move(account, -count);
  }

  /** @internal for DescriptorAccount: it stopped accepting (its reserve is free) or is gone. */
  changed(account: DescriptorAccount, gone: boolean): void {
    if (gone) {
      this.#accounts.delete(account);
      this.#inUse -= account.used + 1;
    }
    this.#rebalance();
  }

  #move(account: DescriptorAccount, count: number): void {
    const before = this.#unusedOf(account);
    account.used += count;
    this.#inUse += count;
    this.#unusedReserves += this.#unusedOf(account) - before;
  }

  #unusedOf(account: DescriptorAccount): number {
    return account.reserving ? Math.max(0, this.#reserve - account.used) : 0;
  }

  /** Listeners came or went: the reserves are shared out again (on reloads only, never per connection). */
  #rebalance(): void {
    let reserving = 0;
    for (const account of this.#accounts) if (account.reserving) reserving++;
    this.#reserve = reserving === 0 ? 0 : Math.min(this.#maxReserve, Math.floor(this.capacity / (2 * reserving)));
    this.#unusedReserves = 0;
    for (const account of this.#accounts) this.#unusedReserves += this.#unusedOf(account);
  }
}

/** One listener's share of the budget. */
export class DescriptorAccount {
  readonly #budget: DescriptorBudget;
  /** Descriptors of live connections and sessions (not counting the listening socket). */
  used = 0;
  /** False once the listener stopped accepting. */
  reserving = true;
  #disposed = false;

  constructor(budget: DescriptorBudget) {
    this.#budget = budget;
  }

  /** Takes `count` descriptors for a new connection or session, unless that would go past the budget. */
  tryAcquire(count: number): boolean {
    return this.reserving && this.#budget.tryTake(this, count);
  }

  release(count: number): void {
    if (!this.#disposed) this.#budget.give(this, count);
  }

  /** The listener stopped accepting (a drain): what remains is its live connections. */
  stopReserving(): void {
    if (!this.reserving) return;
    this.reserving = false;
    this.#budget.changed(this, false);
  }

  /** The listening socket is closed and its connections are gone. */
  dispose(): void {
    if (this.#disposed) return;
    this.reserving = false;
    this.#budget.changed(this, true);
    this.#disposed = true;
  }
}
