// deploy/argocd/argocd-cm-patch.yaml, written from the Lua of deploy/argocd/ (health.lua,
// actions/discovery.lua, actions/<name>/action.lua) in the format argocd-cm takes: the health check as
// one key, the actions as one YAML document of `discovery.lua` and `definitions`. `npm run
// deploy:argocd` writes it; test/deploy/argocd.test.ts fails when the file differs from what this renders.
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { stringify } from 'yaml';
import { GROUP, KIND } from '../src/api/names.ts';

export const ARGOCD_DIR = new URL('../deploy/argocd/', import.meta.url);
export const ARGOCD_CM_PATCH = new URL('argocd-cm-patch.yaml', ARGOCD_DIR);
export const HEALTH_KEY = `resource.customizations.health.${GROUP}_${KIND}`;
export const ACTIONS_KEY = `resource.customizations.actions.${GROUP}_${KIND}`;

/** The scripts as literal blocks, line for line as in their files. */
const LITERAL = { blockQuote: 'literal', lineWidth: 0 } as const;

const lua = (path: string) => readFileSync(new URL(path, ARGOCD_DIR), 'utf8');

/** The actions, each a folder of deploy/argocd/actions/ holding its action.lua. */
export function actionNames(): string[] {
  return readdirSync(new URL('actions/', ARGOCD_DIR), { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => entry.name)
    .sort();
}

/** The value of the actions key: what Argo CD parses as a ResourceActions document. */
export function renderActions(): string {
  return stringify(
    {
      'discovery.lua': lua('actions/discovery.lua'),
      definitions: actionNames().map((name) => ({ name, 'action.lua': lua(`actions/${name}/action.lua`) })),
    },
    LITERAL,
  );
}

export function renderArgocdCmPatch(): string {
  const patch = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'argocd-cm' },
    data: { [HEALTH_KEY]: lua('health.lua'), [ACTIONS_KEY]: renderActions() },
  };
  return `# Written by \`npm run deploy:argocd\` (build/argocd-cm.ts) from health.lua and actions/: edit those.\n${stringify(patch, LITERAL)}`;
}

if (import.meta.main) writeFileSync(ARGOCD_CM_PATCH, renderArgocdCmPatch());
