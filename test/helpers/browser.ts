import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';

/**
 * The panel's browser tests drive Debian's Chromium (`.ci/run` installs it)
 * through playwright-core: headless, no sandbox (CI runs as root), and none of
 * Chromium's own network traffic (this machine has no network beyond the
 * registries; without these flags it keeps dialling out).
 */
export const CHROMIUM = process.env.PASARELA_CHROMIUM ?? '/usr/bin/chromium';

export function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
      '--disable-quic',
      '--disable-gpu',
    ],
  });
}

/** Where every run writes each page's screenshots (git-ignored): `<name>-1280.png` and `<name>-390.png`. */
export const SCREENSHOTS = join(process.cwd(), '.pasarela-test', 'panel-screenshots');

/** The page as it is, at desktop and at phone width (the viewport is restored after). */
export async function screenshots(page: Page, name: string): Promise<void> {
  mkdirSync(SCREENSHOTS, { recursive: true });
  const before = page.viewportSize();
  for (const width of [1280, 390]) {
    await page.setViewportSize({ width, height: 900 });
    await page.screenshot({ path: join(SCREENSHOTS, `${name}-${width}.png`), fullPage: true });
  }
  if (before) await page.setViewportSize(before);
}

/**
 * At phone width (390 px), how far the page and each scrolling table box
 * reach past their own width: 0 when nothing needs a sideways scroll to be
 * read. The viewport is restored after.
 */
export async function overflowAtPhoneWidth(page: Page): Promise<{ page: number; tables: number[] }> {
  const before = page.viewportSize();
  await page.setViewportSize({ width: 390, height: 900 });
  // Run in the page (the tests' TypeScript has no DOM types).
  const out = await page.evaluate<{ page: number; tables: number[] }>(`({
    page: document.documentElement.scrollWidth - document.documentElement.clientWidth,
    tables: [...document.querySelectorAll('.table-wrap')].map((t) => t.scrollWidth - t.clientWidth),
  })`);
  if (before) await page.setViewportSize(before);
  return out;
}

/** Signs in through the sign-in form, as a person would. */
export async function signIn(page: Page, base: string, credential: string): Promise<void> {
  await page.goto(`${base}/panel/login`);
  await page.getByLabel('Token or key').fill(credential);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL((u) => !u.pathname.startsWith('/panel/login'));
}
