import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { documentText, openApiDocument, OPENAPI_APPS } from './openapi-documents';

/** `npm run openapi`: writes every app's OpenAPI document to docs/openapi/<app>.json. */
async function main(): Promise<void> {
  const dir = join(__dirname, '..', '..', 'docs', 'openapi');
  mkdirSync(dir, { recursive: true });
  for (const name of Object.keys(OPENAPI_APPS)) {
    writeFileSync(join(dir, `${name}.json`), documentText(await openApiDocument(name)));
    console.log(`[openapi] docs/openapi/${name}.json`);
  }
}

main().catch((err: unknown) => {
  console.error('[openapi] failed:', err);
  process.exit(1);
});
