/**
 * SUBSCRIBE_BLOCK_DISPOSABLE's throwaway domains, from the optional `mailchecker` (docs/subscribe.md
 * "Throwaway addresses"), loaded by the Node entry only when set: the Worker bundle never carries it.
 */
import { importOptional } from '../../node/optional-package.js';

interface DisposableList {
  blacklist(): Set<string>;
}

/** The test: a domain the list names, or one under it (`x.mailinator.com`). MissingPackageError without the package. */
export async function loadDisposableDomains(load: () => Promise<DisposableList> = importMailchecker): Promise<(domain: string) => boolean> {
  const domains = (await importOptional('mailchecker', 'SUBSCRIBE_BLOCK_DISPOSABLE=true', load)).blacklist();
  return function isDisposableDomain(domain: string): boolean {
    const labels = domain.toLowerCase().split('.');
    return labels.some((_, index) => domains.has(labels.slice(index).join('.')));
  };
}

/** CommonJS: Node's `import()` names only `isValid` statically, so `blacklist` is read from `default`. */
async function importMailchecker(): Promise<DisposableList> {
  const module = (await import('mailchecker')) as Partial<DisposableList> & { default?: DisposableList };
  return module.default ?? (module as DisposableList);
}
