/**
 * One mailbox, one key: the spellings of an address that reach the same inbox are counted as one
 * by the repeat guard and the surge's distinct-address count (docs/subscribe.md "Mailbox keys").
 * Only the key is derived; what goes upstream stays as the visitor typed it.
 */

/** Providers known to deliver `j.a.n.e@` to `jane@`, each mapped to its one domain. */
const DOTS_IGNORED: Readonly<Record<string, string>> = {
  'gmail.com': 'gmail.com',
  'googlemail.com': 'gmail.com',
};

/** The address's domain, lower-cased (the part after the last `@`). */
export function domainOf(email: string): string {
  return email.slice(email.lastIndexOf('@') + 1).toLowerCase();
}

/**
 * The mailbox an address reaches: lower-cased (no provider treats case as another inbox in
 * practice), a `+tag` dropped (subaddressing, RFC 5233, which the major providers deliver to the
 * untagged box), and for providers that ignore dots, the dots dropped and the domain unified.
 */
export function mailboxKeyOf(email: string): string {
  const at = email.lastIndexOf('@');
  let local = email.slice(0, at).toLowerCase();
  let domain = domainOf(email);
  const plus = local.indexOf('+');
  // A local part that is only a tag (`+x@`) is kept whole: there is no mailbox name to keep.
  if (plus > 0) local = local.slice(0, plus);
  const unified = DOTS_IGNORED[domain];
  if (unified !== undefined) {
    local = local.replaceAll('.', '');
    domain = unified;
  }
  return `${local}@${domain}`;
}
