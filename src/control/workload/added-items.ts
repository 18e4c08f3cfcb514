// What a workload patch adds that the stable template does not have, judged: a strategic merge
// patch matches containers, init containers and volumes by name and ports by containerPort, so a
// misspelt name (`wbe` for `web`) adds a second container and leaves the one meant unchanged, and a
// misspelt delete deletes nothing. Either is refused, naming the field, what the template has and
// the closest of it, unless spec.workloads[].adds lists the item (added on purpose). Pure; plan and
// the controller both come here through patchedTemplate (workloads.ts).

import type { WorkloadAdds } from '../../api/spec-types.ts';
import { closestKey } from '../../util/closest.ts';
import type { UnmatchedItem, UnmatchedList } from './strategic-merge.ts';

const NOUNS: Readonly<Record<UnmatchedList, string>> = {
  containers: 'container',
  initContainers: 'init container',
  volumes: 'volume',
  containerPorts: 'port',
};

/** The problems of the patch's unmatched items, at `at` (`spec.workloads[i]`); [] when each is listed in `adds`. */
export function addedItemProblems(
  unmatched: readonly UnmatchedItem[],
  adds: WorkloadAdds | undefined,
  at: string,
): string[] {
  return unmatched.flatMap((item) => {
    const noun = NOUNS[item.list];
    const listed: readonly (string | number)[] = adds?.[item.list] ?? [];
    if (item.effect === 'added' && listed.includes(item.key)) return [];
    const has = item.existing.length === 0 ? 'none' : item.existing.join(', ');
    const meant = closestKey(String(item.key), item.existing.map(String));
    const where = `${at}.patch.${item.at}`;
    if (item.effect === 'deletedNothing') {
      const guess = meant === undefined ? '' : `; did you mean ${meant}?`;
      return [
        `${where}: deletes ${noun} ${item.key}, which the stable template does not have (it has ${has}), so it deletes nothing${guess}`,
      ];
    }
    const guess = meant === undefined ? '' : `: did you mean ${meant}?`;
    return [
      `${where}: the stable template has no ${noun} ${item.key} (it has ${has}), so the patch would add one instead of changing one${guess} ` +
        `(to add ${item.key} on purpose, list it in ${at}.adds.${item.list})`,
    ];
  });
}
