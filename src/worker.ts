import { createWorker } from './workers/handler.js';

/**
 * Workers entry: `export default { fetch, scheduled }` with env bindings and `waitUntil`. Nothing else is
 * exported from here: workerd treats every named export of the main module as an entrypoint.
 */
export default createWorker();
