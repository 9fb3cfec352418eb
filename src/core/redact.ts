/** Shorter is a truncated paste, not a key, and is not redacted. */
export const MIN_API_KEY_LENGTH = 8;

/** Each secret also trimmed: a Worker secret may keep a trailing newline. */
export function createRedactor(secrets: readonly unknown[]): (value: string) => string {
  const forms = new Set<string>();
  for (const secret of secrets) {
    if (typeof secret !== 'string') continue;
    for (const form of [secret, secret.trim()]) if (form.length >= MIN_API_KEY_LENGTH) forms.add(form);
  }
  // Longest first, so a form containing another is replaced whole.
  const ordered = [...forms].sort((a, b) => b.length - a.length);
  if (ordered.length === 0) return (value) => value;
  const shortest = ordered[ordered.length - 1]!.length;
  return (value) => {
    if (value.length < shortest) return value;
    let result = value;
    for (const form of ordered) if (result.includes(form)) result = result.replaceAll(form, '[redacted]');
    return result;
  };
}
