// A workload patch that would add (or delete) what it likely did not mean to (issue 46): the strategic
// merge reports each item of containers, initContainers, volumes and ports that matched nothing, and
// addedItemProblems refuses each one `adds` does not list, naming the field, what the template has
// and the closest of it. Pure; plan and the controller both reach it through patchedTemplate.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1Deployment } from '@kubernetes/client-node';
import type { WorkloadAdds } from '../../../src/api/spec-types.ts';
import { addedItemProblems } from '../../../src/control/workload/added-items.ts';
import { mergeTemplate } from '../../../src/control/workload/strategic-merge.ts';
import { patchedTemplate } from '../../../src/control/workload/workloads.ts';

const template = {
  metadata: { labels: { app: 'web' } },
  spec: {
    initContainers: [{ name: 'migrate', image: 'example/migrate:1' }],
    containers: [
      { name: 'web', image: 'example/web:3.0', ports: [{ name: 'http', containerPort: 8080 }] },
      { name: 'sidecar', image: 'example/proxy:1' },
    ],
    volumes: [{ name: 'config', configMap: { name: 'web' } }],
  },
};

const AT = 'spec.workloads[0]';
const problemsOf = (patch: unknown, adds?: WorkloadAdds) =>
  addedItemProblems(mergeTemplate(template, patch).unmatched, adds, AT);

describe('a workload patch that adds or deletes what the stable template does not have', () => {
  const cases: readonly (readonly [string, unknown, WorkloadAdds | undefined, readonly string[]])[] = [
    [
      'a change of an existing container',
      { spec: { containers: [{ name: 'web', image: 'example/web:5.0' }] } },
      undefined,
      [],
    ],
    [
      'a misspelt container',
      { spec: { containers: [{ name: 'wbe', image: 'example/web:5.0' }] } },
      undefined,
      [
        'spec.workloads[0].patch.spec.containers[name=wbe]: the stable template has no container wbe (it has web, sidecar), so the patch would add one instead of changing one: did you mean web? (to add wbe on purpose, list it in spec.workloads[0].adds.containers)',
      ],
    ],
    [
      'a new container far from every name: no guess',
      { spec: { containers: [{ name: 'debug', image: 'example/debug:1' }] } },
      undefined,
      [
        'spec.workloads[0].patch.spec.containers[name=debug]: the stable template has no container debug (it has web, sidecar), so the patch would add one instead of changing one (to add debug on purpose, list it in spec.workloads[0].adds.containers)',
      ],
    ],
    [
      'the same, listed in adds',
      { spec: { containers: [{ name: 'debug', image: 'example/debug:1' }] } },
      { containers: ['debug'] },
      [],
    ],
    [
      'listed under another list: still refused',
      { spec: { containers: [{ name: 'debug', image: 'example/debug:1' }] } },
      { volumes: ['debug'] },
      [
        'spec.workloads[0].patch.spec.containers[name=debug]: the stable template has no container debug (it has web, sidecar), so the patch would add one instead of changing one (to add debug on purpose, list it in spec.workloads[0].adds.containers)',
      ],
    ],
    [
      'a misspelt init container',
      { spec: { initContainers: [{ name: 'migrat', image: 'example/migrate:2' }] } },
      undefined,
      [
        'spec.workloads[0].patch.spec.initContainers[name=migrat]: the stable template has no init container migrat (it has migrate), so the patch would add one instead of changing one: did you mean migrate? (to add migrat on purpose, list it in spec.workloads[0].adds.initContainers)',
      ],
    ],
    [
      'a misspelt volume',
      { spec: { volumes: [{ name: 'confg', configMap: { name: 'web-v2' } }] } },
      undefined,
      [
        'spec.workloads[0].patch.spec.volumes[name=confg]: the stable template has no volume confg (it has config), so the patch would add one instead of changing one: did you mean config? (to add confg on purpose, list it in spec.workloads[0].adds.volumes)',
      ],
    ],
    [
      'a port renumbered by its name: the merge key is containerPort, so it adds a second port',
      { spec: { containers: [{ name: 'web', ports: [{ name: 'http', containerPort: 8081 }] }] } },
      undefined,
      [
        'spec.workloads[0].patch.spec.containers[name=web].ports[containerPort=8081]: the stable template has no port 8081 (it has 8080), so the patch would add one instead of changing one: did you mean 8080? (to add 8081 on purpose, list it in spec.workloads[0].adds.containerPorts)',
      ],
    ],
    [
      'a port added on purpose',
      { spec: { containers: [{ name: 'web', ports: [{ containerPort: 9090 }] }] } },
      { containerPorts: [9090] },
      [],
    ],
    [
      'a delete of a container that is not there deletes nothing',
      { spec: { containers: [{ name: 'sidecr', $patch: 'delete' }] } },
      { containers: ['sidecr'] },
      [
        'spec.workloads[0].patch.spec.containers[name=sidecr]: deletes container sidecr, which the stable template does not have (it has web, sidecar), so it deletes nothing; did you mean sidecar?',
      ],
    ],
    ['a delete of one that is there', { spec: { containers: [{ name: 'sidecar', $patch: 'delete' }] } }, undefined, []],
    [
      'env and volumeMounts add freely (adding one is what a patch of them is for)',
      {
        spec: {
          containers: [
            { name: 'web', env: [{ name: 'NEW', value: '1' }], volumeMounts: [{ name: 'config', mountPath: '/new' }] },
          ],
        },
      },
      undefined,
      [],
    ],
    [
      'a template replaced whole ($patch: replace) adds nothing item by item',
      { spec: { $patch: 'replace', containers: [{ name: 'other', image: 'x/y:1' }] } },
      undefined,
      [],
    ],
    [
      'every problem, not only the first',
      { spec: { containers: [{ name: 'wbe', image: 'example/web:5.0' }], volumes: [{ name: 'confg' }] } },
      undefined,
      [
        'spec.workloads[0].patch.spec.containers[name=wbe]: the stable template has no container wbe (it has web, sidecar), so the patch would add one instead of changing one: did you mean web? (to add wbe on purpose, list it in spec.workloads[0].adds.containers)',
        'spec.workloads[0].patch.spec.volumes[name=confg]: the stable template has no volume confg (it has config), so the patch would add one instead of changing one: did you mean config? (to add confg on purpose, list it in spec.workloads[0].adds.volumes)',
      ],
    ],
  ];
  for (const [name, patch, adds, expected] of cases) {
    it(name, () => assert.deepEqual(problemsOf(patch, adds), expected));
  }

  it('the merge still adds what it is told to: the canary of a listed sidecar has both containers', () => {
    const merged = mergeTemplate(template, { spec: { containers: [{ name: 'debug', image: 'example/debug:1' }] } });
    assert.deepEqual(
      merged.template.spec.containers.map((container) => container.name),
      ['web', 'sidecar', 'debug'],
    );
  });

  it("patchedTemplate (plan's and the controller's) refuses the typo'd container and gives no template", () => {
    const stable: V1Deployment = {
      metadata: { name: 'web' },
      spec: { selector: { matchLabels: { app: 'web' } }, template },
    };
    const problems: string[] = [];
    const patched = patchedTemplate(
      stable,
      { name: 'web', patch: { spec: { containers: [{ name: 'wbe', image: 'example/web:5.0' }] } } },
      AT,
      problems,
    );
    assert.equal(patched, undefined);
    assert.match(problems.join('\n'), /containers\[name=wbe\]: .* did you mean web\?/);
  });
});
