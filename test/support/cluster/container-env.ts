/**
 * A container's environment as a kubelet resolves it, for the kubelet simulations (kubelet.ts on the
 * fake, test/cluster/node/kubelet.ts on a real control plane): `value`s, the `fieldRef`s they know,
 * and each emptyDir mount a fresh directory under `dir`, an env value under its mountPath pointing
 * into it; so too a mount of one of `filled` (volume name → a directory the kubelet already wrote, as a
 * secret or configMap volume's files). A string says what cannot be resolved (the pod then waits in
 * CreateContainerConfigError).
 */
import { mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import type { V1Container, V1Pod } from '@kubernetes/client-node';

export function resolveContainerEnv(
  pod: V1Pod,
  container: V1Container,
  fields: Readonly<Record<string, string | undefined>>,
  dir: string,
  madeDirs: string[],
  filled: Readonly<Record<string, string>> = {},
): Record<string, string> | string {
  const mounts = (container.volumeMounts ?? []).flatMap((mount) => {
    const written = filled[mount.name];
    if (written !== undefined) return [{ path: mount.mountPath, dir: written }];
    if (pod.spec?.volumes?.find((volume) => volume.name === mount.name)?.emptyDir === undefined) return [];
    const made = mkdtempSync(join(dir, `${mount.name}-`));
    madeDirs.push(made);
    return [{ path: mount.mountPath, dir: made }];
  });
  const env: Record<string, string> = {};
  for (const variable of container.env ?? []) {
    const fieldPath = variable.valueFrom?.fieldRef?.fieldPath;
    if (variable.valueFrom !== undefined && (fieldPath === undefined || !(fieldPath in fields))) {
      return `env ${variable.name}: the kubelet simulation does not resolve ${JSON.stringify(variable.valueFrom)}`;
    }
    let value = fieldPath === undefined ? (variable.value ?? '') : (fields[fieldPath] ?? '');
    const mount = mounts.find((item) => value === item.path || value.startsWith(`${item.path}/`));
    if (mount !== undefined) value = mount.dir + value.slice(mount.path.length);
    env[variable.name] = value;
  }
  return env;
}
