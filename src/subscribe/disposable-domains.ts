/**
 * SUBSCRIBE_BLOCK_DISPOSABLE's list of throwaway domains, from the `mailchecker` package
 * (docs/subscribe.md "Throwaway addresses" says why this list). An optional dependency: loaded
 * only when the setting is on, by the Node entry, so neither the Worker bundle nor a service
 * without the setting carries its ~1 MB.
 */

/** The package the list comes from, named in the line an owner sees when it is missing. */
export const DISPOSABLE_LIST_PACKAGE = 'mailchecker';

interface DisposableList {
  blacklist(): Set<string>;
}

/** What an owner is told when the setting is on and the package is not installed. */
export class DisposableListMissing extends Error {
  constructor() {
    super(`SUBSCRIBE_BLOCK_DISPOSABLE=true needs the package ${DISPOSABLE_LIST_PACKAGE}: run npm install ${DISPOSABLE_LIST_PACKAGE}`);
    this.name = 'DisposableListMissing';
  }
}

/**
 * Loads the list and returns its test: a domain, or any domain it is under (`x.mailinator.com`),
 * that the list names. `load` is a seam for tests; it defaults to the package's import.
 */
export async function loadDisposableDomains(
  load: () => Promise<DisposableList> = async () => (await import('mailchecker')) as DisposableList,
): Promise<(domain: string) => boolean> {
  let domains: Set<string>;
  try {
    domains = (await load()).blacklist();
  } catch (error) {
    const code = (error as { code?: unknown } | undefined)?.code;
    if (code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND') throw new DisposableListMissing();
    throw error;
  }
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
