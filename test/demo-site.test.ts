import { readFileSync } from 'node:fs';
import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import { createDemoSite } from '../src/demo-site.js';
import { createTestApp } from './helpers.js';

const CONFIG_ON_DISK = readFileSync(new URL('../examples/site/config.js', import.meta.url), 'utf8');

function siteWith(turnstileSiteKey: string | undefined) {
  const site = createDemoSite(turnstileSiteKey);
  return new Hono().get('*', (c, next) => site(c, next));
}

describe('the demo site', () => {
  it('serves config.js as it is on disk when no Turnstile site key is set', async () => {
    const response = await siteWith(undefined).request('/config.js');
    expect(await response.text()).toBe(CONFIG_ON_DISK);
  });

  it('fills TURNSTILE_SITE_KEY into config.js, so the form shows the widget', async () => {
    const response = await siteWith('0x4AAAAAAA-fake-site').request('/config.js');
    expect(response.headers.get('content-type')).toMatch(/^text\/javascript/);
    const body = await response.text();
    expect(body).toContain(`window.NEWSLETTER_TURNSTILE_SITE_KEY = "0x4AAAAAAA-fake-site";`);
    expect(body).toContain("window.NEWSLETTER_BFF_URL = '';");
  });

  it('serves the other files unchanged', async () => {
    const response = await siteWith('0x4AAAAAAA-fake-site').request('/subscribe.js');
    expect(response.status).toBe(200);
    expect(await response.text()).toContain('cf-turnstile');
  });

  it('lets the page load Turnstile’s script and frame only when a site key is set', async () => {
    const cspOf = async (env: Record<string, string>) => {
      const { app } = createTestApp({ env, site: createDemoSite(env.TURNSTILE_SITE_KEY) });
      return (await app.request('/index.html')).headers.get('content-security-policy') ?? '';
    };
    const withKey = await cspOf({ TURNSTILE_SITE_KEY: '0x4AAAAAAA-fake-site' });
    expect(withKey).toContain("script-src 'self' https://challenges.cloudflare.com;");
    expect(withKey).toContain("frame-src 'self' https://challenges.cloudflare.com;");
    expect(await cspOf({})).not.toContain('challenges.cloudflare.com');
  });
});
