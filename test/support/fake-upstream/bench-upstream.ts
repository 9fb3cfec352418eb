import { createArchive, type Archive } from './archive.js';
import { startFakeUpstreamServer } from './server.js';
import type { UpstreamVariant } from './variant.js';

export { createArchive };

/**
 * The bench's upstream (bench/run.mjs): the fake upstream on 127.0.0.1 over a generated
 * archive, answering after `latencyMs`, with call counters per operation and `close()`.
 */
export async function startUpstreamSim({
  latencyMs = 50,
  apiKey,
  archive = createArchive(),
  variant,
}: {
  latencyMs?: number;
  apiKey: string;
  archive?: Archive;
  /** How it differs from the assumptions: its list order and validators, say (fake-upstream/variant.ts). */
  variant?: UpstreamVariant;
}) {
  // No hold cap below the bench's slowest scenario (the stale one waits 1 s per call).
  const server = await startFakeUpstreamServer({ apiKey, latencyMs, publication: archive, maxHoldMs: 60_000, ...(variant && { variant }) });
  return Object.assign(server, { archive, close: () => server.stop() });
}
