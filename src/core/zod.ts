import { config } from 'zod/mini';
import { en } from 'zod/locales';

/*
 * zod/mini: the classic build is not tree-shakable. It registers no locale, so messages we do not
 * write would read "Invalid input"; English is registered here, beside the `z` every schema
 * imports, so no module (test, bench, embedder) can miss it.
 */
config(en());

// Name by name, not one namespace object, so the Worker bundle keeps tree-shaking zod.
export * from 'zod/mini';
