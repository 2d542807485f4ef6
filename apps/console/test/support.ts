import type { Page } from 'playwright-core';
import { OPERATOR_AUDIENCE } from '@dlock/identity';
import { testIssuer, waitFor } from '@dlock/testing';

/** A person's token as `npm run identity:token` mints it, from the tests' issuer. */
export async function personToken(subject: string): Promise<string> {
  return (await testIssuer()).mint(subject, OPERATOR_AUDIENCE, { ttlSec: 3_600 });
}

/** Signs `subject` in through the page's form and waits until the header names them. */
export async function signInOnPage(page: Page, subject: string, timeoutMs = 30_000) {
  await page.locator('#sign-in-token').fill(await personToken(subject));
  await page.locator('#sign-in-submit').click();
  await page
    .locator('[data-testid=operator]', { hasText: new RegExp(`^signed in as ${subject}$`) })
    .waitFor({ timeout: timeoutMs });
}

/**
 * Waits until `expression`, evaluated in the page, is true. Not waitForFunction: its polling
 * evaluates a string with eval, which the page's Content-Security-Policy refuses (docs/console.md).
 */
export async function waitInPage(
  page: Page,
  expression: string,
  timeoutMs: number,
  what = expression,
): Promise<void> {
  await waitFor(async () => (await page.evaluate(expression)) === true, timeoutMs, what);
}
