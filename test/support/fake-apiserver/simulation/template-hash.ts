/**
 * The `pod-template-hash` label the Deployment controller gives a ReplicaSet and its pods, as
 * kube-controller-manager computes it (controller.ComputeHash): FNV-1a (32 bit) over the pod
 * template, then over the Deployment's `status.collisionCount` when it is set (8 bytes, little
 * endian), printed in decimal and mapped character by character onto the "safe" alphabet
 * (rand.SafeEncodeString) — so at most 10 characters of `bcdfghjklmnpqrstvwxz2456789`.
 *
 * Kubernetes hashes the Go struct; here the template's canonical JSON stands in for it (keys
 * sorted, a null member the same as an absent one), so one template always gets one hash however
 * its JSON is ordered: a typed client's copy and the raw object of a watch event alike. The shape
 * is Kubernetes', the value for a given template is not.
 */
const SAFE_ALPHABET = 'bcdfghjklmnpqrstvwxz2456789';
const FNV32_OFFSET = 0x811c9dc5;
const FNV32_PRIME = 0x01000193;

export const POD_TEMPLATE_HASH = 'pod-template-hash';

export function podTemplateHash(template: unknown, collisionCount?: number): string {
  let hash = FNV32_OFFSET;
  const feed = (bytes: Uint8Array) => {
    for (const byte of bytes) hash = Math.imul(hash ^ byte, FNV32_PRIME) >>> 0;
  };
  feed(Buffer.from(canonicalJson(template), 'utf8'));
  if (collisionCount !== undefined) {
    const count = Buffer.alloc(8);
    count.writeUInt32LE(collisionCount >>> 0);
    feed(count);
  }
  return [...String(hash)].map((digit) => SAFE_ALPHABET[digit.charCodeAt(0) % SAFE_ALPHABET.length]).join('');
}

/** JSON with object keys sorted and null/undefined members left out (Dates as their JSON). */
function canonicalJson(value: unknown): string {
  if (value === null || value === undefined) return 'null';
  if (typeof value === 'object' && typeof (value as { toJSON?: unknown }).toJSON === 'function')
    return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (typeof value === 'object') {
    const members = Object.entries(value as Record<string, unknown>)
      .filter(([, member]) => member !== null && member !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([key, member]) => `${JSON.stringify(key)}:${canonicalJson(member)}`);
    return `{${members.join(',')}}`;
  }
  return JSON.stringify(value);
}

/** Whether a ReplicaSet's template is the Deployment's (EqualIgnoreHash: its hash label aside). */
export function sameTemplateIgnoringHash(replicaSetTemplate: unknown, deploymentTemplate: unknown): boolean {
  return canonicalJson(withoutHashLabel(replicaSetTemplate)) === canonicalJson(withoutHashLabel(deploymentTemplate));
}

/** The template without the hash label, and with a labels map even if empty ("none" equals "{}"). */
function withoutHashLabel(template: unknown): unknown {
  const t = (template ?? {}) as { metadata?: { labels?: Record<string, string> } };
  const { [POD_TEMPLATE_HASH]: _hash, ...labels } = t.metadata?.labels ?? {};
  return { ...t, metadata: { ...t.metadata, labels } };
}
