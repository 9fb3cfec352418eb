import { importOptional } from '../../node/optional-package.js';

type DisposableList = { blacklist(): Set<string> };

/**
 * SUBSCRIBE_BLOCK_DISPOSABLE's test (docs/subscribe.md "Throwaway addresses"): a domain `mailchecker` lists, or one under it
 * (`x.mailinator.com`). Loaded by the Node entry only when set: the Worker bundle never carries it. MissingPackageError without it.
 */
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
