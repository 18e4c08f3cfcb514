// Long loops on the main thread (10 000 listeners: a reload, a scrape) would hold every connection
// still for as long as they run. They do their work in slices instead: a few milliseconds, then
// the event loop runs what is waiting, then the next slice.

/** About this much work at a time. */
const SLICE_MS = 5;
/** Units of work between two looks at the clock. */
const CHECK_EVERY = 32;

/** One long loop's clock: `if (slicer.due()) await slicer.pause();` once per unit of work. */
export class Slicer {
  #sliceStart = performance.now();
  #units = 0;

  /** Call once per unit of work: true when the slice is used up and pause() is due. */
  due(): boolean {
    if (++this.#units % CHECK_EVERY !== 0) return false;
    return performance.now() - this.#sliceStart >= SLICE_MS;
  }

  /** Lets the event loop run (I/O and timers first), then starts the next slice. */
  async pause(): Promise<void> {
    await new Promise((resolve) => setImmediate(resolve));
    this.#sliceStart = performance.now();
  }
}
