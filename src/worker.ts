import { createWorker } from './workers/handler.js';

/** Workers entry. Nothing else is exported: workerd treats every named export as an entrypoint. */
export default createWorker();
