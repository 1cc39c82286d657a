/** Reopens the Web UI on the main job's SQLite file (starts the dev server if it is not running). */
import { ensureServer } from './lib/local-server';

ensureServer()
  .then((s) => {
    console.log(`Temporal server ${s.address}${s.startedHere ? ' started' : ' already running'}; Web UI: ${s.uiUrl ?? '(external server)'}`);
    process.exit(0);
  })
  .catch((err: unknown) => {
    console.error(err);
    process.exit(1);
  });
