// For the work queue's tests, whose timers are mocked: let every promise callback run, and hold a
// reconcile until the test lets it end.

/** Resolves once every promise callback queued so far has run (setImmediate is not mocked). */
export const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** A promise the test resolves: `passed` settles once `open()` is called. */
export function gate(): { readonly passed: Promise<void>; open(): void } {
  const { promise, resolve } = Promise.withResolvers<void>();
  return { passed: promise, open: () => resolve() };
}
