/**
 * The verbs: get, list, create, update, patch, delete, on any served type, with kube-apiserver's
 * rules for resourceVersion preconditions, the status subresource split, generation, no-op writes,
 * finalizers and deletionTimestamp, and propagation policies. HTTP-free: the server module maps
 * requests onto these methods, and the garbage collector calls them too.
 */
import { randomUUID } from 'node:crypto';
import { applyConfiguration } from './apply.ts';
import { errors } from '../wire/errors.ts';
import { clone, deepEqual, isObject, type KObject } from '../wire/json.ts';
import { KindHooks } from '../resources/kinds.ts';
import { jsonPatch, mergePatch, PatchError, strategicMergePatch } from '../resources/patch.ts';
import { apiVersionOf, Registry, type ResourceType, typeFromCrd, typeKey } from '../resources/registry.ts';
import {
  fieldValue,
  matchFields,
  matchLabels,
  parseFieldSelector,
  parseLabelSelector,
  SelectorError,
} from '../resources/selectors.ts';
import { toScale } from './scale.ts';
import { Store } from './store.ts';
import { compileSchema, pruneAndDefault, validateObject, type WriteScope } from '../resources/structural-schema.ts';

/** A request's target collection: type, requested version and namespace ('' when cluster-wide). */
export interface Target {
  rt: ResourceType;
  version: string;
  namespace: string;
}

export interface ListOptions {
  labelSelector?: string;
  fieldSelector?: string;
  limit?: number;
  continue?: string;
}

export interface DeleteOptions {
  propagationPolicy?: string;
  preconditions?: { uid?: string; resourceVersion?: string };
  dryRun?: boolean;
  /** Seconds the object may take to go ({@link FakeApi.gracePeriod} decides what that means per type). */
  gracePeriodSeconds?: number;
}

export type PropagationPolicy = 'Foreground' | 'Background' | 'Orphan';

/** The `fieldValidation` query parameter: what a field the schema does not know earns. */
export type FieldValidation = 'Strict' | 'Warn' | 'Ignore';

/** How a create, update, patch or apply is admitted. */
export interface WriteOptions {
  dryRun?: boolean;
  /** Unknown fields of a custom resource: 400 (Strict), a warning (Warn, the default) or nothing; pruned either way. */
  fieldValidation?: FieldValidation;
  /** Where Warn's warnings go (the server sends them as `Warning` headers). */
  warnings?: string[];
}

/** How the body reached the object, which decides how strict decoding words an unknown field. */
type Arrival = 'decode' | 'patch' | 'apply';

export const PATCH_TYPES = {
  json: 'application/json-patch+json',
  merge: 'application/merge-patch+json',
  strategic: 'application/strategic-merge-patch+json',
  apply: 'application/apply-patch+yaml',
} as const;

/** apimachinery's TotalAnnotationSizeLimitB: 256 KiB of keys and values together. */
const TOTAL_ANNOTATION_SIZE_LIMIT = 256 * 1024;
const SYSTEM_NAMESPACES = ['default', 'kube-system', 'kube-public', 'kube-node-lease'];
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS1035_LABEL = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;

/** RFC 3339 in whole seconds, as kube-apiserver writes metav1.Time. */
export function rfc3339(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

export function nowRfc3339(): string {
  return rfc3339(Date.now());
}

function randomSuffix(): string {
  const alphabet = 'bcdfghjklmnpqrstvwxz2456789';
  let s = '';
  for (let i = 0; i < 5; i++) s += alphabet[Math.floor(Math.random() * alphabet.length)];
  return s;
}

/** Everything but metadata (and status, when status is a subresource): what bumps generation. */
function specPart(rt: ResourceType, o: KObject): KObject {
  const { metadata: _m, status: _s, apiVersion: _a, kind: _k, ...rest } = o;
  return rt.statusSubresource ? rest : { ...rest, status: o.status };
}

/** Object minus what never makes a write "real": the RV and the times in managedFields. */
function comparable(o: KObject): KObject {
  const { resourceVersion: _rv, managedFields, ...meta } = o.metadata ?? {};
  if (Array.isArray(managedFields))
    meta.managedFields = managedFields.map((e) => (isObject(e) ? { ...e, time: undefined } : e));
  return { ...o, metadata: meta };
}

/** Runs a patch algorithm; a malformed patch is 400, one that cannot be applied 422. */
function patchOutcome(t: Target, name: string, run: () => unknown): KObject {
  let out: unknown;
  try {
    out = run();
  } catch (e) {
    if (!(e instanceof PatchError)) throw e;
    if (e.kind === 'malformed') throw errors.badRequest(e.message);
    throw errors.invalid(t.rt.group, t.rt.kind, name, [{ field: '', message: e.message }]);
  }
  if (!isObject(out))
    throw errors.invalid(t.rt.group, t.rt.kind, name, [{ field: '', message: 'patch result is not an object' }]);
  return out;
}

/** The 400 kube-apiserver writes for unknown fields under `fieldValidation=Strict`. */
function strictDecodingMessage(t: Target, obj: KObject, unknown: string[], arrival: Arrival): string {
  if (arrival === 'apply') {
    const id = t.rt.namespaced ? `${t.namespace}/${obj.metadata?.name ?? ''}` : String(obj.metadata?.name ?? '');
    return `failed to create typed patch object (${id}; ${apiVersionOf(t.rt.group, t.version)}, Kind=${t.rt.kind}): ${unknown.map((f) => `.${f}: field not declared in schema`).join(', ')}`;
  }
  const decoding = `strict decoding error: ${unknown.map((f) => `unknown field "${f}"`).join(', ')}`;
  return arrival === 'patch'
    ? decoding
    : `${t.rt.kind} in version "${t.version}" cannot be handled as a ${t.rt.kind}: ${decoding}`;
}

export class FakeApi {
  readonly registry = new Registry();
  readonly store = new Store();
  readonly hooks: KindHooks;
  /** Called after any write so the GC (and namespace controller) can run. */
  onChange: () => void = () => {};
  /** Called when a CRD is removed, so open watches on its type can be closed. */
  onTypeRemoved: (key: string) => void = () => {};
  /**
   * A type's CheckGracefulDelete: the grace period in seconds a DELETE of `obj` gets, given the
   * request's `gracePeriodSeconds`; 0 or undefined deletes at once. Nothing is graceful unless the
   * Deployment simulation (pods) sets it: without a kubelet, nobody would ever finish the deletion.
   */
  gracePeriod: (rt: ResourceType, obj: KObject, requested: number | undefined) => number | undefined = () => undefined;
  /** Server-side apply: each manager's last applied configuration, by object uid, then by manager. */
  readonly #lastApplied = new Map<string, Map<string, KObject>>();

  constructor(opts: { serviceCidr: string }) {
    this.hooks = new KindHooks(opts.serviceCidr);
    this.store.subscribe((ev) => {
      if (ev.type === 'DELETED') this.#lastApplied.delete(ev.object.metadata.uid);
    });
    const nsType = this.registry.lookup('', 'v1', 'namespaces')!;
    for (const ns of SYSTEM_NAMESPACES)
      this.create({ rt: nsType, version: 'v1', namespace: '' }, { metadata: { name: ns } });
  }

  /** The object as served under the requested version. */
  present(t: { rt: ResourceType; version: string }, obj: KObject): KObject {
    // The stored object carries the storage version; a read at another served version names that one.
    const { apiVersion: _a, kind: _k, ...rest } = obj;
    return { apiVersion: apiVersionOf(t.rt.group, t.version), kind: t.rt.kind, ...rest };
  }

  #stored(rt: ResourceType, obj: KObject): KObject {
    const { apiVersion: _a, kind: _k, ...rest } = obj;
    return { apiVersion: apiVersionOf(rt.group, rt.versions[0]!), kind: rt.kind, ...rest };
  }

  // ------------------------------------------------------------------------- get / list

  get(t: Target, name: string): KObject {
    const obj = this.store.get(typeKey(t.rt.group, t.rt.plural), t.namespace, name);
    if (!obj) throw errors.notFound(t.rt.group, t.rt.plural, name);
    return this.present(t, obj);
  }

  /** Build a matcher for label/field selectors; throws 400 on a bad selector. */
  matcher(rt: ResourceType, labelSelector?: string, fieldSelector?: string): (o: KObject) => boolean {
    try {
      const labels = parseLabelSelector(labelSelector);
      const computed = rt.computedFieldSelectors ?? {};
      const supported = ['metadata.name', 'metadata.namespace', ...rt.extraFieldSelectors, ...Object.keys(computed)];
      const fields = parseFieldSelector(fieldSelector, supported);
      const read = (o: KObject, field: string) => computed[field]?.(o) ?? fieldValue(o, field);
      return (o) => matchLabels(labels, o.metadata?.labels) && matchFields(fields, o, read);
    } catch (e) {
      if (e instanceof SelectorError) throw errors.badRequest(e.message);
      throw e;
    }
  }

  list(t: Target, opts: ListOptions = {}): KObject {
    const key = typeKey(t.rt.group, t.rt.plural);
    const match = this.matcher(t.rt, opts.labelSelector, opts.fieldSelector);
    const ns = t.rt.namespaced && t.namespace ? t.namespace : undefined;
    const idOf = (o: KObject) => `${o.metadata.namespace ?? ''}/${o.metadata.name}`;
    let items = this.store
      .list(key, ns)
      .filter(match)
      .sort((a, b) => (idOf(a) < idOf(b) ? -1 : idOf(a) > idOf(b) ? 1 : 0));
    let rv = this.store.resourceVersion;
    let cont = '';
    let remaining: number | undefined;
    if (opts.continue) {
      let token: { rv: number; start: string };
      try {
        token = JSON.parse(Buffer.from(opts.continue, 'base64url').toString('utf8'));
      } catch {
        throw errors.badRequest('continue key is not valid: illegal base64 data');
      }
      if (token.rv < this.store.compactionFloor)
        throw errors.expired(
          'The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.',
        );
      rv = token.rv;
      items = items.filter((o) => idOf(o) > token.start);
    }
    if (opts.limit && opts.limit > 0 && items.length > opts.limit) {
      remaining = items.length - opts.limit;
      items = items.slice(0, opts.limit);
      cont = Buffer.from(JSON.stringify({ rv, start: idOf(items[items.length - 1]!) })).toString('base64url');
    }
    const metadata: KObject = { resourceVersion: String(rv) };
    if (cont) {
      metadata.continue = cont;
      metadata.remainingItemCount = remaining;
    }
    // Typed (built-in) lists carry no apiVersion/kind on items; unstructured (CR) lists do.
    const present = (o: KObject) => {
      if (t.rt.builtin) {
        const { apiVersion: _a, kind: _k, ...rest } = o;
        return rest;
      }
      return this.present(t, o);
    };
    return {
      kind: t.rt.listKind,
      apiVersion: apiVersionOf(t.rt.group, t.version),
      metadata,
      items: items.map(present),
    };
  }

  // ------------------------------------------------------------------------- create

  create(t: Target, body: unknown, opts: WriteOptions = {}, arrival: Arrival = 'decode'): KObject {
    const { rt } = t;
    if (!isObject(body)) throw errors.badRequest('the body of the request was not a JSON object');
    this.#checkKind(t, body);
    const obj = this.#stored(rt, clone(body));
    const meta: KObject = isObject(obj.metadata) ? obj.metadata : (obj.metadata = {});
    if (rt.namespaced) {
      if (meta.namespace && meta.namespace !== t.namespace)
        throw errors.badRequest(
          'the namespace of the provided object does not match the namespace sent on the request',
        );
      meta.namespace = t.namespace;
    } else delete meta.namespace;
    if (!meta.name && meta.generateName) meta.name = `${meta.generateName}${randomSuffix()}`;
    this.#validateName(rt, meta.name);
    if (meta.resourceVersion) throw errors.badRequest('resourceVersion should not be set on objects to be created');
    if (rt.namespaced) this.#checkNamespaceWritable(rt, t.namespace, meta.name);
    const key = typeKey(rt.group, rt.plural);
    if (this.store.get(key, t.namespace, meta.name)) throw errors.alreadyExists(rt.group, rt.plural, meta.name);

    meta.uid = randomUUID();
    meta.creationTimestamp = nowRfc3339();
    meta.generation = 1;
    delete meta.deletionTimestamp;
    delete meta.deletionGracePeriodSeconds;
    this.#validateMeta(rt, meta);
    if (rt.statusSubresource) {
      const status = this.hooks.initialStatus(rt, obj);
      if (status === undefined) delete obj.status;
      else obj.status = status;
    }
    this.hooks.applyDefaults(rt, obj);
    this.hooks.refuseMalformedMicroTimes(rt, obj);
    this.#admitCustom(t, obj, 'main', opts, arrival);
    if (rt.crdName === undefined && key === 'apiextensions.k8s.io/customresourcedefinitions') this.#validateCrd(obj);
    this.hooks.allocate(rt, obj);
    if (opts.dryRun) {
      this.hooks.release(rt, obj);
      return this.present(t, { ...obj, metadata: { ...meta, resourceVersion: String(this.store.resourceVersion) } });
    }
    const stored = this.store.commit('ADDED', key, obj);
    if (key === 'apiextensions.k8s.io/customresourcedefinitions') this.#registerCrd(stored);
    this.onChange();
    return this.present(t, stored);
  }

  #checkKind(t: Target, body: KObject): void {
    if (body.kind !== undefined && body.kind !== t.rt.kind)
      throw errors.badRequest(
        `the kind in the data (${String(body.kind)}) does not match the expected kind (${t.rt.kind})`,
      );
    const want = apiVersionOf(t.rt.group, t.version);
    if (
      body.apiVersion !== undefined &&
      body.apiVersion !== want &&
      !t.rt.versions.some((v) => apiVersionOf(t.rt.group, v) === body.apiVersion)
    )
      throw errors.badRequest(
        `the API version in the data (${String(body.apiVersion)}) does not match the expected API version (${want})`,
      );
  }

  /**
   * A custom resource through its CRD's structural schema (the requested version's): pruned and
   * defaulted in place, then validated. Unknown fields are refused (400) under Strict, warned of
   * under Warn; invalid values are a 422 naming each field.
   */
  #admitCustom(t: Target, obj: KObject, scope: WriteScope, opts: WriteOptions, arrival: Arrival): void {
    const schema = t.rt.schemas?.[t.version];
    if (!schema) return;
    const unknown = pruneAndDefault(obj, schema, scope);
    const mode = opts.fieldValidation ?? 'Warn';
    if (unknown.length > 0 && mode === 'Strict') {
      const message = strictDecodingMessage(t, obj, unknown, arrival);
      // A server-side apply's typed-patch error is a plain error to kube-apiserver: 500, no reason.
      throw arrival === 'apply' ? errors.plain(message) : errors.badRequest(message);
    }
    if (mode === 'Warn') opts.warnings?.push(...unknown.map((f) => `unknown field "${f}"`));
    const causes = validateObject(obj, schema, scope);
    if (causes.length > 0) throw errors.invalid(t.rt.group, t.rt.kind, obj.metadata?.name ?? '', causes);
  }

  #validateName(rt: ResourceType, name: unknown): void {
    const field = 'metadata.name';
    if (typeof name !== 'string' || name === '')
      throw errors.invalid(rt.group, rt.kind, '', [
        { field, message: 'Required value: name or generateName is required', reason: 'FieldValueRequired' },
      ]);
    const re =
      rt.plural === 'services' && rt.group === ''
        ? DNS1035_LABEL
        : rt.plural === 'namespaces' && rt.group === ''
          ? DNS1123_LABEL
          : DNS1123_SUBDOMAIN;
    const max = re === DNS1123_SUBDOMAIN ? 253 : 63;
    if (!re.test(name) || name.length > max)
      throw errors.invalid(rt.group, rt.kind, name, [
        {
          field,
          message: `Invalid value: "${name}": a lowercase RFC 1123 name must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character`,
        },
      ]);
  }

  /**
   * ObjectMeta's checks beyond the name: owner references, and the annotations' total size (what
   * refuses a client-side `kubectl apply` of a large CRD, whose last-applied annotation holds all of it).
   */
  #validateMeta(rt: ResourceType, meta: KObject): void {
    this.#validateOwnerRefs(rt, meta);
    const annotations: KObject = isObject(meta.annotations) ? meta.annotations : {};
    const size = Object.entries(annotations).reduce(
      (sum, [key, value]) => sum + Buffer.byteLength(key) + Buffer.byteLength(String(value)),
      0,
    );
    if (size > TOTAL_ANNOTATION_SIZE_LIMIT)
      throw errors.invalid(rt.group, rt.kind, meta.name, [
        {
          field: 'metadata.annotations',
          message: `Too long: may not be more than ${TOTAL_ANNOTATION_SIZE_LIMIT} bytes`,
          reason: 'FieldValueTooLong',
        },
      ]);
  }

  #validateOwnerRefs(rt: ResourceType, meta: KObject): void {
    const refs = meta.ownerReferences;
    if (refs === undefined) return;
    if (!Array.isArray(refs)) throw errors.badRequest('metadata.ownerReferences must be a list');
    let controllers = 0;
    for (const [i, r] of refs.entries()) {
      for (const f of ['apiVersion', 'kind', 'name', 'uid'])
        if (!isObject(r) || !r[f])
          throw errors.invalid(rt.group, rt.kind, meta.name, [
            { field: `metadata.ownerReferences[${i}].${f}`, message: 'Required value', reason: 'FieldValueRequired' },
          ]);
      if ((r as KObject).controller === true) controllers++;
    }
    if (controllers > 1)
      throw errors.invalid(rt.group, rt.kind, meta.name, [
        {
          field: 'metadata.ownerReferences',
          message: 'Invalid value: only one reference can have Controller set to true',
        },
      ]);
  }

  #checkNamespaceWritable(rt: ResourceType, namespace: string, name: string): void {
    const ns = this.store.get('/namespaces', '', namespace);
    if (!ns) throw errors.notFound('', 'namespaces', namespace);
    if (ns.metadata.deletionTimestamp)
      throw errors.forbidden(
        rt.group,
        rt.plural,
        name,
        `unable to create new content in namespace ${namespace} because it is being terminated`,
      );
  }

  #validateCrd(crd: KObject): void {
    const spec = crd.spec ?? {};
    const plural = spec.names?.plural;
    const name = crd.metadata.name;
    const causes: Array<{ field: string; message: string }> = [];
    if (!spec.group) causes.push({ field: 'spec.group', message: 'Required value' });
    if (!plural) causes.push({ field: 'spec.names.plural', message: 'Required value' });
    if (!spec.names?.kind) causes.push({ field: 'spec.names.kind', message: 'Required value' });
    if (spec.scope !== 'Namespaced' && spec.scope !== 'Cluster')
      causes.push({
        field: 'spec.scope',
        message: `Unsupported value: "${String(spec.scope)}": supported values: "Cluster", "Namespaced"`,
      });
    if (!Array.isArray(spec.versions) || spec.versions.length === 0)
      causes.push({
        field: 'spec.versions',
        message: 'Invalid value: must have exactly one version marked as storage version',
      });
    else if (spec.versions.filter((v: KObject) => v.storage).length !== 1)
      causes.push({
        field: 'spec.versions',
        message: 'Invalid value: must have exactly one version marked as storage version',
      });
    if (plural && spec.group && name !== `${plural}.${spec.group}`)
      causes.push({
        field: 'metadata.name',
        message: `Invalid value: "${name}": must be spec.names.plural+"."+spec.group`,
      });
    for (const [i, v] of (Array.isArray(spec.versions) ? (spec.versions as KObject[]) : []).entries()) {
      const schema = v?.schema?.openAPIV3Schema;
      if (schema === undefined) continue;
      try {
        if (!isObject(schema)) throw new Error('must be an object');
        compileSchema(schema);
      } catch (e) {
        causes.push({
          field: `spec.versions[${i}].schema.openAPIV3Schema`,
          message: `Invalid value: "": ${(e as Error).message}`,
        });
      }
    }
    if (causes.length) throw errors.invalid('apiextensions.k8s.io', 'CustomResourceDefinition', name, causes);
    const existing = this.registry.byKey(typeKey(spec.group, plural));
    if (existing && existing.crdName !== name)
      throw errors.invalid('apiextensions.k8s.io', 'CustomResourceDefinition', name, [
        { field: 'spec.names.plural', message: `Invalid value: "${plural}": already served` },
      ]);
  }

  #registerCrd(crd: KObject): void {
    const t = typeFromCrd(crd);
    const prev = this.registry.all().find((x) => x.crdName === crd.metadata.name);
    if (prev && (!t || prev.group !== t.group || prev.plural !== t.plural)) {
      this.registry.remove(prev.group, prev.plural);
      this.store.dropType(typeKey(prev.group, prev.plural));
      this.onTypeRemoved(typeKey(prev.group, prev.plural));
    }
    if (t) this.registry.set(t);
  }

  #unregisterCrd(crd: KObject): void {
    const prev = this.registry.all().find((x) => x.crdName === crd.metadata.name);
    if (!prev) return;
    const key = typeKey(prev.group, prev.plural);
    this.registry.remove(prev.group, prev.plural);
    this.store.dropType(key);
    this.onTypeRemoved(key);
  }

  // ------------------------------------------------------------------------- update / patch

  update(t: Target, name: string, body: unknown, subresource: string, opts: WriteOptions = {}): KObject {
    if (!isObject(body)) throw errors.badRequest('the body of the request was not a JSON object');
    this.#checkKind(t, body);
    const bodyName = body.metadata?.name;
    if (bodyName !== undefined && bodyName !== name)
      throw errors.badRequest(
        `the name of the object (${String(bodyName)}) does not match the name on the URL (${name})`,
      );
    return this.write(t, name, () => clone(body), {
      ...opts,
      subresource,
      requireRv: !t.rt.builtin,
      arrival: 'decode',
    });
  }

  /** JSON, merge and strategic merge patch; server-side apply is {@link apply}. */
  patch(
    t: Target,
    name: string,
    contentType: string,
    body: unknown,
    subresource: string,
    opts: WriteOptions = {},
  ): KObject {
    if (subresource === 'scale') return this.updateScale(t, name, this.#patcher(t, name, contentType, body), opts);
    return this.write(t, name, this.#patcher(t, name, contentType, body), {
      ...opts,
      subresource,
      requireRv: false,
      arrival: 'patch',
    });
  }

  /** The patch as a function of the current object; 415 for a patch type the resource does not take. */
  #patcher(t: Target, name: string, contentType: string, body: unknown): (cur: KObject) => KObject {
    const accepted = [
      PATCH_TYPES.json,
      PATCH_TYPES.merge,
      ...(t.rt.builtin ? [PATCH_TYPES.strategic] : []),
      PATCH_TYPES.apply,
    ];
    if (!accepted.includes(contentType as any) || contentType === PATCH_TYPES.apply)
      throw errors.unsupportedMediaType(contentType, accepted);
    return (cur: KObject): KObject =>
      patchOutcome(t, name, () => {
        if (contentType === PATCH_TYPES.merge) {
          if (!isObject(body)) throw new PatchError('malformed', 'merge patch must be a JSON object');
          return mergePatch(cur, body);
        }
        if (contentType === PATCH_TYPES.json) return jsonPatch(cur, body);
        return strategicMergePatch(cur, body, t.rt.patchMeta);
      });
  }

  getScale(t: Target, name: string): KObject {
    return toScale(this.get(t, name));
  }

  /**
   * A write through the scale subresource: `mutate` gets the current Scale and returns the new one,
   * whose `spec.replicas` (and resourceVersion, as a precondition) go to the object.
   */
  updateScale(t: Target, name: string, mutate: (scale: KObject) => KObject, opts: { dryRun?: boolean } = {}): KObject {
    const written = this.write(
      t,
      name,
      (cur) => {
        const scale = mutate(toScale(cur));
        const replicas = scale.spec?.replicas;
        if (!Number.isInteger(replicas) || replicas < 0)
          throw errors.invalid('autoscaling', 'Scale', name, [
            {
              field: 'spec.replicas',
              message: `Invalid value: ${JSON.stringify(replicas ?? null)}: must be greater than or equal to 0`,
            },
          ]);
        const rv = scale.metadata?.resourceVersion;
        return {
          ...cur,
          metadata: { ...cur.metadata, resourceVersion: rv || cur.metadata.resourceVersion },
          spec: { ...cur.spec, replicas },
        };
      },
      { requireRv: false, dryRun: opts.dryRun },
    );
    return toScale(written);
  }

  /**
   * Server-side apply (`application/apply-patch+yaml`), approximated as apply.ts describes: creates
   * the object when absent (201), and records one `Apply` managedFields entry per manager (no field
   * sets, no conflicts; `force` is accepted and ignored).
   */
  apply(
    t: Target,
    name: string,
    body: unknown,
    subresource: string,
    opts: WriteOptions & { fieldManager?: string },
  ): { code: number; body: KObject } {
    const { rt } = t;
    const manager = opts.fieldManager;
    if (!manager)
      throw errors.invalid('meta.k8s.io', 'PatchOptions', '', [
        { field: 'fieldManager', message: 'Required value: is required for apply patch', reason: 'FieldValueRequired' },
      ]);
    if (!isObject(body)) throw errors.badRequest('the body of the request was not a YAML or JSON object');
    if (!body.apiVersion || !body.kind)
      throw errors.badRequest(`invalid object type: ${String(body.apiVersion ?? '')}, Kind=${String(body.kind ?? '')}`);
    this.#checkKind(t, body);
    const { managedFields: _ignored, ...metadata } = isObject(body.metadata) ? body.metadata : {};
    if (metadata.name !== undefined && metadata.name !== name)
      throw errors.badRequest(
        `the name of the object (${String(metadata.name)}) does not match the name on the URL (${name})`,
      );
    const applied: KObject = { ...clone(body), metadata: { ...clone(metadata), name } };
    const entry: KObject = {
      manager,
      operation: 'Apply',
      apiVersion: body.apiVersion,
      time: nowRfc3339(),
      fieldsType: 'FieldsV1',
      fieldsV1: {},
    };
    if (subresource) entry.subresource = subresource;
    const slot = subresource ? `${manager}/${subresource}` : manager;
    const remember = (obj: KObject) => {
      if (opts.dryRun) return;
      const uid = obj.metadata.uid as string;
      if (!this.#lastApplied.has(uid)) this.#lastApplied.set(uid, new Map());
      this.#lastApplied.get(uid)!.set(slot, applied);
    };
    const withEntry = (obj: KObject): KObject => {
      const entries = [...((obj.metadata.managedFields ?? []) as KObject[])];
      const mine = entries.findIndex(
        (e) => e.manager === manager && e.operation === 'Apply' && (e.subresource ?? '') === subresource,
      );
      entries.splice(mine < 0 ? entries.length : mine, mine < 0 ? 0 : 1, entry);
      return { ...obj, metadata: { ...obj.metadata, managedFields: entries } };
    };
    const merge = (live: KObject, previous: KObject | undefined) =>
      patchOutcome(t, name, () => applyConfiguration(live, applied, previous, rt.patchMeta));

    const cur = this.store.get(typeKey(rt.group, rt.plural), t.namespace, name);
    if (!cur) {
      if (subresource) throw errors.notFound(rt.group, rt.plural, name);
      const created = this.create(t, withEntry(merge({}, undefined)), opts, 'apply');
      remember(created);
      return { code: 201, body: created };
    }
    const previous = this.#lastApplied.get(cur.metadata.uid)?.get(slot);
    const updated = this.write(t, name, (live) => withEntry(merge(live, previous)), {
      ...opts,
      subresource,
      requireRv: false,
      arrival: 'apply',
    });
    remember(updated);
    return { code: 200, body: updated };
  }

  /**
   * The update pipeline shared by PUT, PATCH and the garbage collector. `mutate` gets a copy of the
   * current object and returns the candidate. A non-empty `metadata.resourceVersion` in the
   * candidate is a precondition (409 if stale).
   */
  write(
    t: Target,
    name: string,
    mutate: (cur: KObject) => KObject,
    opts: WriteOptions & { subresource?: string; requireRv?: boolean; arrival?: Arrival },
  ): KObject {
    const { rt } = t;
    const key = typeKey(rt.group, rt.plural);
    const cur = this.store.get(key, t.namespace, name);
    if (!cur) throw errors.notFound(rt.group, rt.plural, name);
    const candidate = mutate(clone(cur));
    if (!isObject(candidate.metadata)) candidate.metadata = {};
    if (candidate.metadata.name !== name)
      throw errors.badRequest(
        `the name of the object (${String(candidate.metadata.name)}) does not match the name on the URL (${name})`,
      );
    if (rt.namespaced && candidate.metadata.namespace && candidate.metadata.namespace !== t.namespace)
      throw errors.badRequest('the namespace of the provided object does not match the namespace sent on the request');
    const rvIn = candidate.metadata.resourceVersion;
    if (rvIn !== undefined && rvIn !== null && rvIn !== '' && String(rvIn) !== cur.metadata.resourceVersion)
      throw errors.conflict(rt.group, rt.plural, name);
    if ((rvIn === undefined || rvIn === null || rvIn === '') && opts.requireRv)
      throw errors.invalid(rt.group, rt.kind, name, [
        { field: 'metadata.resourceVersion', message: 'Invalid value: 0x0: must be specified for an update' },
      ]);

    let next: KObject;
    if (opts.subresource === 'status') {
      next = clone(cur);
      if (candidate.status === undefined) delete next.status;
      else next.status = candidate.status;
      this.#admitCustom(t, next, 'status', opts, opts.arrival ?? 'patch');
    } else if (opts.subresource) {
      throw errors.noRoute();
    } else {
      next = this.#stored(rt, candidate);
      if (rt.statusSubresource) {
        if (cur.status === undefined) delete next.status;
        else next.status = clone(cur.status);
      }
      for (const f of [
        'uid',
        'creationTimestamp',
        'deletionTimestamp',
        'deletionGracePeriodSeconds',
        'generation',
      ] as const) {
        if (cur.metadata[f] === undefined) delete next.metadata[f];
        else next.metadata[f] = cur.metadata[f];
      }
      // Clients unaware of managedFields (absent or []) keep them; `[{}]` clears them.
      const managed = next.metadata.managedFields;
      if (managed === undefined || (Array.isArray(managed) && managed.length === 0))
        next.metadata.managedFields = cur.metadata.managedFields;
      else if (Array.isArray(managed) && managed.length === 1 && deepEqual(managed[0], {}))
        delete next.metadata.managedFields;
      if (next.metadata.managedFields === undefined) delete next.metadata.managedFields;
      if (rt.namespaced) next.metadata.namespace = t.namespace;
      else delete next.metadata.namespace;
      this.#validateMeta(rt, next.metadata);
      this.hooks.applyDefaults(rt, next);
      this.#admitCustom(t, next, 'main', opts, opts.arrival ?? 'patch');
      this.hooks.preserveAllocations(rt, next, cur);
      this.hooks.refuseImmutableChanges(rt, next, cur);
      this.hooks.refuseMalformedMicroTimes(rt, next);
      if (key === 'apiextensions.k8s.io/customresourcedefinitions') this.#validateCrd(next);
      if (cur.metadata.deletionTimestamp) {
        const before = new Set<string>(cur.metadata.finalizers ?? []);
        const added = ((next.metadata.finalizers ?? []) as string[]).filter((f) => !before.has(f));
        if (added.length)
          throw errors.invalid(rt.group, rt.kind, name, [
            {
              field: 'metadata.finalizers',
              message: `Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{${added.map((f) => `"${f}"`).join(', ')}}`,
              reason: 'FieldValueForbidden',
            },
          ]);
      }
      if (!deepEqual(specPart(rt, next), specPart(rt, cur)))
        next.metadata.generation = (cur.metadata.generation ?? 0) + 1;
    }
    next.metadata.resourceVersion = cur.metadata.resourceVersion;
    if (Array.isArray(next.metadata.finalizers) && next.metadata.finalizers.length === 0)
      delete next.metadata.finalizers;

    // A write that changes nothing keeps the RV and emits no event.
    if (deepEqual(comparable(next), comparable(cur))) return this.present(t, cur);
    if (opts.dryRun) return this.present(t, next);
    const pending =
      next.metadata.finalizers?.length > 0 || (key === '/namespaces' && next.spec?.finalizers?.length > 0);
    // ShouldDeleteDuringUpdate: the last finalizer gone removes the object, unless a grace period is
    // still running: then whoever runs it (the kubelet) finishes the deletion with a grace of 0. The
    // answer is the written object at the resourceVersion it had before (deleteWithoutFinalizers
    // returns the request's object), not the deletion's.
    if (next.metadata.deletionTimestamp && !pending && !(next.metadata.deletionGracePeriodSeconds > 0)) {
      this.#remove(rt, next);
      return this.present(t, next);
    }
    const stored = this.store.commit('MODIFIED', key, next);
    if (key === 'apiextensions.k8s.io/customresourcedefinitions') this.#registerCrd(stored);
    this.onChange();
    return this.present(t, stored);
  }

  // ------------------------------------------------------------------------- delete

  /** Returns the HTTP code and body kube-apiserver would send for a DELETE. */
  delete(t: Target, name: string, opts: DeleteOptions = {}): { code: number; body: KObject } {
    const { rt } = t;
    const key = typeKey(rt.group, rt.plural);
    const cur = this.store.get(key, t.namespace, name);
    if (!cur) throw errors.notFound(rt.group, rt.plural, name);
    const pre = opts.preconditions ?? {};
    if (pre.uid && pre.uid !== cur.metadata.uid)
      throw errors.conflict(
        rt.group,
        rt.plural,
        name,
        `Precondition failed: UID in precondition: ${pre.uid}, UID in object meta: ${cur.metadata.uid}`,
      );
    if (pre.resourceVersion && pre.resourceVersion !== cur.metadata.resourceVersion)
      throw errors.conflict(
        rt.group,
        rt.plural,
        name,
        `Precondition failed: ResourceVersion in precondition: ${pre.resourceVersion}, ResourceVersion in object meta: ${cur.metadata.resourceVersion}`,
      );
    const policy = (opts.propagationPolicy ?? 'Background') as PropagationPolicy;
    if (!['Foreground', 'Background', 'Orphan'].includes(policy))
      throw errors.invalid(rt.group, rt.kind, name, [
        {
          field: 'propagationPolicy',
          message: `Unsupported value: "${policy}": supported values: "Foreground", "Background", "Orphan"`,
        },
      ]);

    const finalizers = new Set<string>(cur.metadata.finalizers ?? []);
    if (policy === 'Foreground') {
      finalizers.add('foregroundDeletion');
      finalizers.delete('orphan');
    } else if (policy === 'Orphan') {
      finalizers.add('orphan');
      finalizers.delete('foregroundDeletion');
    }
    const isNamespace = key === '/namespaces';
    if (cur.metadata.deletionTimestamp) return this.#deleteAgain(t, cur, opts);
    const grace = this.gracePeriod(rt, cur, opts.gracePeriodSeconds) ?? 0;
    if (finalizers.size > 0 || isNamespace || grace > 0) {
      const next = clone(cur);
      // rest.BeforeDelete: the time by which the object should be gone.
      next.metadata.deletionTimestamp = rfc3339(Date.now() + grace * 1000);
      next.metadata.deletionGracePeriodSeconds = grace;
      if (finalizers.size > 0) next.metadata.finalizers = [...finalizers];
      if (!isNamespace) next.metadata.generation = (cur.metadata.generation ?? 0) + 1;
      if (isNamespace) next.status = { ...(next.status ?? {}), phase: 'Terminating' };
      if (opts.dryRun) return { code: 200, body: this.present(t, next) };
      const stored = this.store.commit('MODIFIED', key, next);
      this.onChange();
      return { code: 200, body: this.present(t, stored) };
    }
    if (opts.dryRun) return { code: 200, body: this.#deleteResponse(t, cur) };
    const final = this.#remove(rt, cur);
    return { code: 200, body: this.#deleteResponse(t, final) };
  }

  /**
   * DELETE of an object already being deleted: nothing changes (the propagation policy is not
   * switched, a running grace period does not start over), except that an explicitly shorter grace
   * period shortens a pending one, counted from when the deletion started, as rest.BeforeDelete
   * does; down to 0, which removes the object now unless finalizers hold it.
   */
  #deleteAgain(t: Target, cur: KObject, opts: DeleteOptions): { code: number; body: KObject } {
    const pending: number = cur.metadata.deletionGracePeriodSeconds ?? 0;
    const period =
      pending > 0 && opts.gracePeriodSeconds !== undefined
        ? (this.gracePeriod(t.rt, cur, opts.gracePeriodSeconds) ?? 0)
        : pending;
    if (period >= pending) return { code: 200, body: this.present(t, cur) };
    const next = clone(cur);
    next.metadata.deletionTimestamp = rfc3339(Date.parse(cur.metadata.deletionTimestamp) - (pending - period) * 1000);
    next.metadata.deletionGracePeriodSeconds = period;
    if (opts.dryRun) return { code: 200, body: this.present(t, next) };
    if (period === 0 && !(next.metadata.finalizers?.length > 0))
      return { code: 200, body: this.#deleteResponse(t, this.#remove(t.rt, next)) };
    const stored = this.store.commit('MODIFIED', typeKey(t.rt.group, t.rt.plural), next);
    this.onChange();
    return { code: 200, body: this.present(t, stored) };
  }

  #deleteResponse(t: Target, obj: KObject): KObject {
    if (t.rt.returnDeletedObject) return this.present(t, obj);
    return {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Success',
      details: { name: obj.metadata.name, group: t.rt.group, kind: t.rt.plural, uid: obj.metadata.uid },
    };
  }

  /** Remove an object for good (DELETED event), releasing allocations and CRD registrations. */
  #remove(rt: ResourceType, obj: KObject): KObject {
    const key = typeKey(rt.group, rt.plural);
    const final = this.store.commit('DELETED', key, obj);
    this.hooks.release(rt, final);
    if (key === 'apiextensions.k8s.io/customresourcedefinitions') this.#unregisterCrd(final);
    this.onChange();
    return final;
  }

  /** Remove a namespace whose content is gone (the namespace controller's last step). */
  finalizeNamespace(name: string): void {
    const ns = this.store.get('/namespaces', '', name);
    if (ns?.metadata.deletionTimestamp && !(ns.metadata.finalizers?.length > 0))
      this.#remove(this.registry.byKey('/namespaces')!, ns);
  }
}
