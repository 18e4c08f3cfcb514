/**
 * The secret and configMap volumes of a pod, as the kubelet writes them before its containers start: one
 * directory per volume under `dir`, a file per key (or per `items` entry, at its `path`), from the object the
 * API has now (not kept in sync afterwards, as a subPath mount is not either). A missing object that is not
 * `optional` throws, naming it in the real kubelet's words; the kubelet keeps the pod ContainerCreating and
 * tries again. Other volume kinds are not here (emptyDir: container-env.ts).
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { CoreV1Api, V1KeyToPath, V1Pod } from '@kubernetes/client-node';

/** Volume name → the directory holding its files; `made` gets every directory made, for cleanup. */
export async function writeObjectVolumes(
  core: CoreV1Api,
  pod: V1Pod,
  dir: string,
  made: string[],
): Promise<Record<string, string>> {
  const namespace = pod.metadata!.namespace!;
  const filled: Record<string, string> = {};
  for (const volume of pod.spec?.volumes ?? []) {
    const source = volume.secret ?? volume.configMap;
    if (source === undefined) continue;
    const kind = volume.secret !== undefined ? 'secret' : 'configmap';
    const name = volume.secret?.secretName ?? volume.configMap?.name ?? '';
    const data = await read(core, kind, namespace, name).catch((err: { code?: number }): Record<string, Buffer> => {
      if (err.code === 404 && source.optional === true) return {};
      if (err.code === 404)
        throw new Error(`MountVolume.SetUp failed for volume "${volume.name}": ${kind} "${name}" not found`);
      throw err;
    });
    const volumeDir = mkdtempSync(join(dir, `${volume.name}-`));
    made.push(volumeDir);
    const items: V1KeyToPath[] = source.items ?? Object.keys(data).map((key) => ({ key, path: key }));
    for (const item of items) {
      const content = data[item.key];
      if (content === undefined) {
        if (source.optional === true) continue;
        throw new Error(
          `MountVolume.SetUp failed for volume "${volume.name}": ${kind} "${name}" has no key ${item.key}`,
        );
      }
      const file = join(volumeDir, item.path);
      mkdirSync(dirname(file), { recursive: true });
      writeFileSync(file, content, {
        mode: item.mode ?? volume.secret?.defaultMode ?? volume.configMap?.defaultMode ?? 0o644,
      });
    }
    filled[volume.name] = volumeDir;
  }
  return filled;
}

async function read(
  core: CoreV1Api,
  kind: 'secret' | 'configmap',
  namespace: string,
  name: string,
): Promise<Record<string, Buffer>> {
  if (kind === 'secret') {
    const secret = await core.readNamespacedSecret({ name, namespace });
    return Object.fromEntries(
      Object.entries(secret.data ?? {}).map(([key, value]) => [key, Buffer.from(value, 'base64')]),
    );
  }
  const map = await core.readNamespacedConfigMap({ name, namespace });
  return {
    ...Object.fromEntries(
      Object.entries(map.binaryData ?? {}).map(([key, value]) => [key, Buffer.from(value, 'base64')]),
    ),
    ...Object.fromEntries(Object.entries(map.data ?? {}).map(([key, value]) => [key, Buffer.from(value)])),
  };
}
