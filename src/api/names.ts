// The CanaryRelease's group, version and kind, and the names canary-l4 writes on the objects it
// manages: labels, annotations, the finalizer, the field manager, the proxy's admin port name.

export const GROUP = 'canary-l4.io';
export const VERSION = 'v1alpha1';
export const API_VERSION = `${GROUP}/${VERSION}`;
export const KIND = 'CanaryRelease';
export const PLURAL = 'canaryreleases';

/** On the forked/canary copies: the release that owns them. Also the key of the default proxy selector. */
export const LABEL_RELEASE = `${GROUP}/release`;
/** On the copies: `forked` or `canary`. */
export const LABEL_ROLE = `${GROUP}/role`;
/** On the copies: the name of the original Service they were made from. */
export const LABEL_SERVICE = `${GROUP}/service`;
/** On an original Service: its selector and ports as they were before the release touched it (JSON). */
export const ANNOTATION_ORIGINAL = `${GROUP}/original`;
/** On the CanaryRelease: the Services are restored before the release may go. */
export const FINALIZER = `${GROUP}/restore-services`;
/** On the pods of a canary workload, and in the canary selectors that pick them. */
export const LABEL_TRACK = `${GROUP}/track`;
export const TRACK_CANARY = 'canary';
/** On a canary Deployment: the workload it is the canary of. */
export const LABEL_WORKLOAD = `${GROUP}/workload`;
/** The Deployment controller's label on a ReplicaSet's pods: what pins the forked copy to the stable pods. */
export const LABEL_TEMPLATE_HASH = 'pod-template-hash';
/** On a canary Deployment: a hash of what the release asks of it (its live spec carries the
 * apiserver's defaults, so it cannot be compared with the desired one). */
export const ANNOTATION_SPEC_HASH = `${GROUP}/spec-hash`;

export type Labels = Readonly<Record<string, string>>;

/** The field manager of every write: GitOps tools can tell our fields apart (Argo CD's
 * `managedFieldsManagers`), and server-side apply records them as ours. */
export const FIELD_MANAGER = 'canary-l4';

/** `canary-l4.io/release: <name>`: the label the proxy Deployment's pods carry by default. */
export function defaultProxySelector(release: string): Labels {
  return { [LABEL_RELEASE]: release };
}

/** The proxy container's own port (its admin server): a name no Service's targetPort can have on it. */
export const PROXY_ADMIN_PORT_NAME = 'admin';
