import { config } from 'zod/mini';
import { en } from 'zod/locales';

// zod/mini (tree-shakable) registers no locale: English is registered beside the `z` every schema imports.
config(en());

// Name by name, not one namespace object, so the Worker bundle keeps tree-shaking zod.
export * from 'zod/mini';
