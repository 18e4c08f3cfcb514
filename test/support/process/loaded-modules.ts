// A module hook for `node --import`: appends the URL of every module the process loads (ES
// modules and require() alike) to the file named by LOADED_MODULES_FILE, one per line, as it
// loads, so that the list is whole however the process ends.
import { appendFileSync } from 'node:fs';
import { registerHooks } from 'node:module';

const file = process.env.LOADED_MODULES_FILE;
if (file === undefined) throw new Error('loaded-modules.ts: set LOADED_MODULES_FILE');
registerHooks({
  load(url, context, nextLoad) {
    appendFileSync(file, `${url}\n`);
    return nextLoad(url, context);
  },
});
