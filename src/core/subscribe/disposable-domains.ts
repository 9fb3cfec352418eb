/**
 * SUBSCRIBE_BLOCK_DISPOSABLE's list of throwaway domains, from the `mailchecker` package
 * (docs/subscribe.md "Throwaway addresses" says why this list). An optional dependency: loaded
 * only when the setting is on, by the Node entry, so neither the Worker bundle nor a service
 * without the setting carries its ~1 MB.
 */

import { importOptional } from '../../node/optional-package.js';

interface DisposableList {
  blacklist(): Set<string>;
}

/**
 * Loads the list and returns its test: a domain, or any domain it is under (`x.mailinator.com`),
 * that the list names. Without the package it throws MissingPackageError, naming it. `load` is a
 * seam for tests; it defaults to the package's import.
 */
export async function loadDisposableDomains(load: () => Promise<DisposableList> = importMailchecker): Promise<(domain: string) => boolean> {
  const domains = (await importOptional('mailchecker', 'SUBSCRIBE_BLOCK_DISPOSABLE=true', load)).blacklist();
  return function isDisposableDomain(domain: string): boolean {
    let rest = domain.toLowerCase();
    for (;;) {
      if (domains.has(rest)) return true;
      const dot = rest.indexOf('.');
      if (dot === -1) return false;
      rest = rest.slice(dot + 1);
    }
  };
}

/**
 * The package is CommonJS: Node's `import()` names only what its exports object literal shows
 * a static reader (`isValid`, not `blacklist`), so the list is read from `default`, the
 * exports object itself, which bundlers and vitest give as the module too.
 */
async function importMailchecker(): Promise<DisposableList> {
  const module = (await import('mailchecker')) as Partial<DisposableList> & { default?: DisposableList };
  return module.default ?? (module as DisposableList);
}
