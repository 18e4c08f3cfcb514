import { fileURLToPath } from 'node:url';

export const PROJECT_ROOT = fileURLToPath(new URL('..', import.meta.url));
/** Always the project's pinned Node (the system `node` is older), unless `--node` names another. */
export const PROJECT_NODE = fileURLToPath(new URL('../node_modules/.bin/node', import.meta.url));
export const RESULTS_DIR = fileURLToPath(new URL('results/', import.meta.url));
