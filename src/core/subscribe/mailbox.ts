/*
 * One key per mailbox, for the repeat guard and the surge count (docs/subscribe.md "Mailbox keys");
 * what goes upstream stays as typed.
 */

/** Providers known to deliver `j.a.n.e@` to `jane@`, each mapped to its one domain. */
const DOTS_IGNORED: Readonly<Record<string, string>> = {
  'gmail.com': 'gmail.com',
  'googlemail.com': 'gmail.com',
};

export function domainOf(email: string): string {
  return email.slice(email.lastIndexOf('@') + 1).toLowerCase();
}

/** Lower-cased, a `+tag` dropped (RFC 5233), and for providers that ignore dots, dots dropped and the domain unified. */
export function mailboxKeyOf(email: string): string {
  const at = email.lastIndexOf('@');
  let local = email.slice(0, at).toLowerCase();
  let domain = domainOf(email);
  const plus = local.indexOf('+');
  // A local part that is only a tag (`+x@`) is kept whole.
  if (plus > 0) local = local.slice(0, plus);
  const unified = DOTS_IGNORED[domain];
  if (unified !== undefined) {
    local = local.replaceAll('.', '');
    domain = unified;
  }
  return `${local}@${domain}`;
}
