import { config } from 'zod/mini';
import { en } from 'zod/locales';

/*
 * zod/mini rather than `zod`: the classic build is not tree-shakable and was most of the Worker
 * bundle. Its functional API builds the same core schemas, so parsing behaves the same.
 *
 * zod/mini registers no locale, so an issue whose schema gives no message of its own (a
 * non-string Worker binding for HOST, an upstream body of the wrong shape) would read just
 * "Invalid input". The classic build registered English on first use; registering it here keeps
 * those messages as they were. Only the English map is bundled, not every locale.
 */
// Registered beside the `z` that schema modules import by name, not in the entries: tests, the bench and any embedder build schemas without an entry, and a module using this `z` cannot miss it.
config(en());

// Re-exported name by name (not as one namespace object) so the Worker bundle keeps tree-shaking zod.
export * from 'zod/mini';
