/**
 * What kube-controller-manager would do for us: the owner-reference garbage collector
 * (background, foreground and orphan propagation) and the namespace controller (delete a
 * terminating namespace's content, then the namespace). It runs asynchronously after writes, as
 * the real controllers do; when disabled (like envtest, which runs no controller-manager)
 * dependents are never collected and `foregroundDeletion`/`orphan` finalizers stay put.
 */
import type { FakeApi, Target } from './api.ts';
import { ApiError } from '../wire/errors.ts';
import type { KObject } from '../wire/json.ts';
import { splitApiVersion } from '../resources/registry.ts';

export class Controllers {
  readonly #api: FakeApi;
  #enabled: boolean;
  #timer: NodeJS.Immediate | undefined;
  #running = false;

  constructor(api: FakeApi, enabled: boolean) {
    this.#api = api;
    this.#enabled = enabled;
  }

  get enabled(): boolean {
    return this.#enabled;
  }

  set enabled(v: boolean) {
    this.#enabled = v;
    if (v) this.schedule();
  }

  /** Run a sweep soon (coalesced). */
  schedule(): void {
    if (!this.#enabled || this.#timer || this.#running) return;
    this.#timer = setImmediate(() => {
      this.#timer = undefined;
      this.sweep();
    });
  }

  stop(): void {
    if (this.#timer) clearImmediate(this.#timer);
    this.#timer = undefined;
    this.#enabled = false;
  }

  /** Repeat passes until nothing changes (bounded). */
  sweep(): void {
    if (!this.#enabled) return;
    this.#running = true;
    try {
      for (let i = 0; i < 100; i++) if (!this.#pass()) break;
    } finally {
      this.#running = false;
    }
  }

  #target(key: string, namespace: string): Target | undefined {
    const rt = this.#api.registry.byKey(key);
    return rt ? { rt, version: rt.versions[0]!, namespace } : undefined;
  }

  /** Ignore races with clients (object gone, conflict): the next pass sees the new state. */
  #try(fn: () => void): boolean {
    try {
      fn();
      return true;
    } catch (e) {
      if (e instanceof ApiError) return false;
      throw e;
    }
  }

  #ownerExists(dep: KObject, ref: KObject): boolean {
    const found = this.#api.store.byUid(ref.uid);
    if (!found) return false;
    const [group] = splitApiVersion(String(ref.apiVersion ?? ''));
    const rt = this.#api.registry.byKey(found.key);
    if (!rt || rt.group !== group || rt.kind !== ref.kind) return false;
    // A namespaced owner must live in the dependent's namespace.
    return !rt.namespaced || found.namespace === (dep.metadata.namespace ?? '');
  }

  #pass(): boolean {
    const api = this.#api;
    let changed = false;
    const all = [...api.store.entries()];
    const dependentsOf = (uid: string) =>
      [...api.store.entries()].filter(([, o]) =>
        ((o.metadata.ownerReferences ?? []) as KObject[]).some((r) => r.uid === uid),
      );

    for (const [key, snap] of all) {
      // Earlier steps of this pass may have changed or removed it: act on the current state.
      const obj = api.store.get(key, snap.metadata.namespace ?? '', snap.metadata.name);
      if (!obj || obj.metadata.uid !== snap.metadata.uid) continue;
      const m = obj.metadata;
      const t = this.#target(key, m.namespace ?? '');
      if (!t) continue;
      const fins: string[] = m.finalizers ?? [];

      // Foreground: delete dependents, wait for the blocking ones, then drop the finalizer.
      if (m.deletionTimestamp && fins.includes('foregroundDeletion')) {
        const deps = dependentsOf(m.uid);
        for (const [dk, d] of deps) {
          if (d.metadata.deletionTimestamp) continue;
          const dt = this.#target(dk, d.metadata.namespace ?? '');
          if (dt && this.#try(() => api.delete(dt, d.metadata.name, { propagationPolicy: 'Foreground' })))
            changed = true;
        }
        const blocking = deps.filter(([, d]) =>
          (d.metadata.ownerReferences as KObject[]).some((r) => r.uid === m.uid && r.blockOwnerDeletion === true),
        );
        if (blocking.length === 0 && this.#removeFinalizer(t, obj, 'foregroundDeletion')) changed = true;
        continue;
      }

      // Orphan: strip our owner reference from every dependent, then drop the finalizer.
      if (m.deletionTimestamp && fins.includes('orphan')) {
        for (const [dk, d] of dependentsOf(m.uid)) {
          const dt = this.#target(dk, d.metadata.namespace ?? '');
          if (!dt) continue;
          this.#try(() =>
            api.write(
              dt,
              d.metadata.name,
              (o) => {
                o.metadata.ownerReferences = (o.metadata.ownerReferences as KObject[]).filter((r) => r.uid !== m.uid);
                if (o.metadata.ownerReferences.length === 0) delete o.metadata.ownerReferences;
                return o;
              },
              {},
            ),
          );
          changed = true;
        }
        if (this.#removeFinalizer(t, obj, 'orphan')) changed = true;
        continue;
      }

      // Namespace controller: delete the content, then the namespace.
      if (key === '/namespaces' && m.deletionTimestamp) {
        const content = all.filter(([ck, o]) => ck !== '/namespaces' && o.metadata.namespace === m.name);
        for (const [ck, o] of content) {
          if (o.metadata.deletionTimestamp) continue;
          const ct = this.#target(ck, m.name);
          if (ct && this.#try(() => api.delete(ct, o.metadata.name, { propagationPolicy: 'Background' })))
            changed = true;
        }
        if (content.length === 0) {
          if (obj.spec?.finalizers?.length) {
            this.#try(() => api.write(t, m.name, (o) => ({ ...o, spec: { ...o.spec, finalizers: [] } }), {}));
          }
          api.finalizeNamespace(m.name);
          changed = true;
        }
        continue;
      }

      // Dependents whose owners are all gone are deleted; dangling references next to live
      // owners are removed.
      const refs = (m.ownerReferences ?? []) as KObject[];
      if (refs.length === 0) continue;
      const dangling = refs.filter((r) => !this.#ownerExists(obj, r));
      if (dangling.length === 0) continue;
      if (dangling.length === refs.length) {
        if (m.deletionTimestamp) continue;
        // Dependents of a foreground-deleted owner are already handled above; here the owner is gone.
        if (this.#try(() => api.delete(t, m.name, { propagationPolicy: 'Background' }))) changed = true;
      } else if (
        this.#try(() =>
          api.write(
            t,
            m.name,
            (o) => {
              o.metadata.ownerReferences = refs.filter((r) => !dangling.includes(r));
              return o;
            },
            {},
          ),
        )
      )
        changed = true;
    }
    return changed;
  }

  #removeFinalizer(t: Target, obj: KObject, finalizer: string): boolean {
    return this.#try(() =>
      this.#api.write(
        t,
        obj.metadata.name,
        (o) => {
          o.metadata.finalizers = ((o.metadata.finalizers ?? []) as string[]).filter((f) => f !== finalizer);
          return o;
        },
        {},
      ),
    );
  }
}
