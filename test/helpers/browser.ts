import { mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { chromium, type Browser, type Locator, type Page } from 'playwright-core';

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

/**
 * The page as it is, at desktop and at phone width (the viewport is restored
 * after), and checked by axe-core at each width: every page a test looks at
 * is checked, so a violation fails the test that showed the page.
 */
export async function screenshots(page: Page, name: string): Promise<void> {
  mkdirSync(SCREENSHOTS, { recursive: true });
  const before = page.viewportSize();
  for (const width of [1280, 390]) {
    await page.setViewportSize({ width, height: 900 });
    await page.screenshot({ path: join(SCREENSHOTS, `${name}-${width}.png`), fullPage: true });
    const violations = await axeViolations(page);
    if (violations.length > 0) throw new Error(`axe-core on ${name} at ${width} px:\n${violations.join('\n')}`);
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

/**
 * The selects of the page's forms whose widest option does not fit them, at
 * 1280 and 390 px, in words ([] when all fit). A select stretched to its card
 * cuts a long option's text without overflowing (its scrollWidth is its
 * clientWidth), so the width it needs is measured on a copy at its own size,
 * laid out where it stands (the same font and padding). The viewport is
 * restored after.
 */
export async function cutSelects(page: Page): Promise<string[]> {
  const before = page.viewportSize();
  const cut: string[] = [];
  for (const width of [1280, 390]) {
    await page.setViewportSize({ width, height: 900 });
    // Run in the page (the tests' TypeScript has no DOM types).
    const found = await page.evaluate<string[]>(`[...document.querySelectorAll('form select')].flatMap((sel) => {
      const copy = sel.cloneNode(true);
      copy.removeAttribute('id');
      copy.style.cssText = 'position: absolute; visibility: hidden; width: max-content; min-width: 0; max-width: none';
      sel.after(copy);
      const needs = copy.getBoundingClientRect().width;
      copy.remove();
      const has = sel.getBoundingClientRect();
      const card = (sel.closest('.card') ?? sel.form).getBoundingClientRect();
      const out = [];
      if (needs > has.width + 0.5) out.push(sel.name + ' at ${width} px: needs ' + Math.ceil(needs) + ' px, has ' + Math.floor(has.width));
      if (has.left < card.left - 0.5 || has.right > card.right + 0.5) out.push(sel.name + ' at ${width} px: reaches past its card');
      return out;
    })`);
    cut.push(...found);
  }
  if (before) await page.setViewportSize(before);
  return cut;
}

/** Signs in through the sign-in form, as a person would. */
export async function signIn(page: Page, base: string, credential: string): Promise<void> {
  await page.goto(`${base}/panel/login`);
  await page.getByLabel('Token or key').fill(credential);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL((u) => !u.pathname.startsWith('/panel/login'));
}

/**
 * A form of the page posted twice 40 ms apart with the browser's cookies and
 * the form's own hidden fields (its CSRF and one-use tokens) plus `fill`: a
 * double submit the disabled button would not let a person make. Both
 * answers, unfollowed. `form` picks the form where several share an action.
 */
export async function postTwice(page: Page, base: string, action: string, fill: Record<string, string | string[]>, form?: Locator) {
  const f = form ?? page.locator(`form[action="${action}"]`);
  const fields = new URLSearchParams({
    _csrf: await f.locator('input[name="_csrf"]').inputValue(),
    _once: await f.locator('input[name="_once"]').inputValue(),
  });
  for (const [k, v] of Object.entries(fill)) for (const x of Array.isArray(v) ? v : [v]) fields.append(k, x);
  const post = () =>
    page.request.post(`${base}${action}`, { data: fields.toString(), headers: { 'content-type': 'application/x-www-form-urlencoded' }, maxRedirects: 0 });
  const one = post();
  await new Promise((r) => setTimeout(r, 40));
  const two = post();
  return Promise.all([one, two]);
}

/** axe-core's source, read once: evaluated in the page (the panel's CSP refuses an injected script tag, not DevTools' evaluation). */
let axeSource: string | undefined;

/**
 * The accessibility rules axe-core finds broken on the page as it is now
 * (WCAG 2 A and AA, and best practices): `[]` when none. Each entry names
 * the rule and the first offending element, so a failing expect says where.
 */
export async function axeViolations(page: Page): Promise<string[]> {
  axeSource ??= readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
  const found = await page.evaluate<Array<{ id: string; help: string; target: string }>>(`(async () => {
    if (!window.axe) { ${axeSource}; }
    const r = await window.axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'] } });
    return r.violations.map((v) => ({ id: v.id, help: v.help, target: String(v.nodes[0] && v.nodes[0].target) }));
  })()`);
  return found.map((v) => `${v.id}: ${v.help} (${v.target})`);
}
