/**
 * How the simulated controllers (deployments, replicasets, the kubelet) read and write objects:
 * straight on {@link FakeApi}, as kube-controller-manager would through the API (the same
 * defaulting, generation, status-subresource and event semantics), but without HTTP, so their
 * writes never show up in the request log a test derives RBAC from. A write that loses a race with
 * a client (the object is gone, or changed) is dropped: the next pass works from the new state.
 */
import type { FakeApi, Target } from '../verbs/api.ts';
import { ApiError } from '../wire/errors.ts';
import type { KObject } from '../wire/json.ts';

export type TypeKey = '/pods' | 'apps/replicasets' | 'apps/deployments';

export class ControllerClient {
  readonly #api: FakeApi;

  constructor(api: FakeApi) {
    this.#api = api;
  }

  list(key: TypeKey, namespace?: string): KObject[] {
    return this.#api.store.list(key, namespace);
  }

  get(key: TypeKey, namespace: string, name: string): KObject | undefined {
    return this.#api.store.get(key, namespace, name);
  }

  /** The object created, or undefined when the create failed (a name taken, a namespace terminating). */
  create(key: TypeKey, namespace: string, body: KObject): KObject | undefined {
    return this.#tolerate(() => this.#api.create(this.#target(key, namespace), body));
  }

  /** Rewrites the object (not its status) if it is still the one read (same uid). */
  update(key: TypeKey, obj: KObject, mutate: (cur: KObject) => KObject): boolean {
    return this.#write(key, obj, mutate, '');
  }

  /** Replaces the status through the status subresource (no generation bump). */
  updateStatus(key: TypeKey, obj: KObject, status: KObject): boolean {
    return this.#write(key, obj, (cur) => ({ ...cur, status }), 'status');
  }

  /** Deletes the object if it is still the one read; `gracePeriodSeconds` as a DELETE's (absent: the type's default). */
  delete(key: TypeKey, obj: KObject, options: { gracePeriodSeconds?: number } = {}): boolean {
    const { name, namespace, uid } = obj.metadata;
    return (
      this.#tolerate(() =>
        this.#api.delete(this.#target(key, namespace), name, { ...options, preconditions: { uid } }),
      ) !== undefined
    );
  }

  #write(key: TypeKey, obj: KObject, mutate: (cur: KObject) => KObject, subresource: string): boolean {
    const { name, namespace, uid } = obj.metadata;
    return (
      this.#tolerate(() =>
        this.#api.write(
          this.#target(key, namespace),
          name,
          (cur) => {
            if (cur.metadata.uid !== uid) throw new ApiError(409, 'Conflict', `${name} was replaced`);
            return mutate(cur);
          },
          { subresource },
        ),
      ) !== undefined
    );
  }

  #target(key: TypeKey, namespace: string): Target {
    const rt = this.#api.registry.byKey(key)!;
    return { rt, version: rt.versions[0]!, namespace };
  }

  #tolerate<T>(fn: () => T): T | undefined {
    try {
      return fn();
    } catch (e) {
      if (e instanceof ApiError) return undefined;
      throw e;
    }
  }
}

/** The owner reference a controller puts on what it creates. */
export function controllerRef(owner: KObject, apiVersion: string, kind: string): KObject {
  return {
    apiVersion,
    kind,
    name: owner.metadata.name,
    uid: owner.metadata.uid,
    controller: true,
    blockOwnerDeletion: true,
  };
}

/** The uid of `obj`'s controller when it is of `kind`. */
export function controllerUid(obj: KObject, kind: string): string | undefined {
  const refs = (obj.metadata?.ownerReferences ?? []) as KObject[];
  return refs.find((ref) => ref.controller === true && ref.kind === kind)?.uid;
}
