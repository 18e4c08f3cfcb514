import { fileURLToPath } from 'node:url';

export const PROJECT_ROOT = fileURLToPath(new URL('..', import.meta.url));
/** Always the project's Node 24 (the system `node` is older). */
export const PROJECT_NODE = fileURLToPath(new URL('../node_modules/.bin/node', import.meta.url));
export const RESULTS_DIR = fileURLToPath(new URL('results/', import.meta.url));
