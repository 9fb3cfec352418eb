import { main } from './check.js';

// `npm run check`: the same environment as `npm start`, and the exit code of the check.
process.exitCode = await main({ env: process.env, write: (line) => process.stdout.write(`${line}\n`) });
