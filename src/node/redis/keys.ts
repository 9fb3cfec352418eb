import { createHash, createHmac } from 'node:crypto';

// Bumped when a stored format changes, so an old deployment's entries are never read.
const FORMAT_VERSION = 'v1';

export interface RedisKeys {
  /** `newsletter-bff:v1:<base URL>:<key digest>:` */
  prefix: string;
  /** A key for a personal value (an address, an IP): its HMAC, never the value. */
  hashed(kind: string, value: string): string;
}

/**
 * Deployments share entries only when they read the same account. The HMAC secret derives from
 * the API key, so a copy of Redis alone cannot test guessed addresses.
 */
export function createRedisKeys(namespace: string, apiKey: string): RedisKeys {
  const digest = createHash('sha256').update(`newsletter-bff shared state\0${apiKey}`).digest('hex').slice(0, 16);
  const secret = createHash('sha256').update(`newsletter-bff keyed hash\0${apiKey}`).digest();
  const prefix = `newsletter-bff:${FORMAT_VERSION}:${encodeURIComponent(namespace)}:${digest}:`;
  return {
    prefix,
    hashed: (kind, value) => `${prefix}${kind}:${createHmac('sha256', secret).update(value).digest('hex').slice(0, 32)}`,
  };
}
