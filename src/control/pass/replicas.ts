// Every replica serves, but only the writer's --weight flags reach status. A replica started with
// other flags (a rollout that changes them, a hand-edited pod) would serve another split than the
// one status reports; its pod spec says which flags it runs with, so the writer can tell.

import type { V1Container, V1Pod } from '@kubernetes/client-node';
import type { PortWeightOverride } from '../../api/proxy-flags.ts';
import { parsePortWeights } from '../../api/proxy-flags.ts';
import { readyPods, selectorMatches } from '../service/selectors.ts';
import type { Labels } from '../../api/names.ts';

const WEIGHT_FLAG = '--weight';
const WEIGHT_ENV = 'CANARY_L4_WEIGHT';

/** `web:80=10,web:53=0`, sorted: equal override sets give equal text. */
export function formatOverrides(overrides: readonly PortWeightOverride[]): string {
  const text = overrides
    .map((item) => `${item.service}:${item.port}=${item.weight}`)
    .sort()
    .join(',');
  return text === '' ? 'none' : text;
}

/** The --weight values of a `canary-l4 proxy` container (args, command, or the environment). */
function weightFlags(container: V1Container): string[] {
  const words = [...(container.command ?? []), ...(container.args ?? [])];
  const flags: string[] = [];
  words.forEach((word, index) => {
    if (word === WEIGHT_FLAG && words[index + 1] !== undefined) flags.push(words[index + 1]!);
    else if (word.startsWith(`${WEIGHT_FLAG}=`)) flags.push(word.slice(WEIGHT_FLAG.length + 1));
  });
  const fromEnv = container.env?.find((variable) => variable.name === WEIGHT_ENV)?.value;
  return flags.length > 0 || fromEnv === undefined ? flags : [fromEnv];
}

function isProxyContainer(container: V1Container): boolean {
  return [...(container.command ?? []), ...(container.args ?? [])].includes('proxy');
}

/**
 * One line per Ready proxy pod whose --weight flags differ from this writer's, naming the pod and
 * both sets. Pods that run no `canary-l4 proxy` container are not replicas.
 */
export function disagreeingReplicas(
  pods: readonly V1Pod[],
  proxySelector: Labels,
  own: readonly PortWeightOverride[],
): string[] {
  const mine = formatOverrides(own);
  return readyPods(pods)
    .filter((pod) => selectorMatches(proxySelector, pod.metadata?.labels))
    .flatMap((pod) => {
      const container = pod.spec?.containers.find(isProxyContainer);
      if (container === undefined) return [];
      let theirs: string;
      try {
        theirs = formatOverrides(parsePortWeights(weightFlags(container)));
      } catch (err) {
        theirs = `unreadable (${(err as Error).message})`;
      }
      return theirs === mine
        ? []
        : [
            `replica ${pod.metadata?.name ?? '<unnamed>'} serves with --weight ${theirs}, this writer with ${mine}: its split differs from status`,
          ];
    });
}
