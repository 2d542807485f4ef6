import 'reflect-metadata';
import type { DynamicModule, Type } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { OpenAPIObject } from '@nestjs/swagger';
import { buildOpenApiDocument } from '@dlock/http-contract';
import { ExecutorModule } from '../apps/executor/src/app.module';
import { LockServerModule } from '../apps/lock-server/src/app.module';
import { PaymentResourceModule } from '../apps/payment-resource/src/app.module';
import { RailProxyModule } from '../apps/rail-proxy/src/app.module';
import { RailStubModule } from '../apps/rail-stub/src/app.module';
import { ReconcilerModule } from '../apps/reconciler/src/app.module';

/**
 * A configuration for each app that only has to be valid: in preview mode
 * Nest instantiates no provider, so nothing connects to these URLs.
 */
const ENV = {
  AUTH_JWKS: '/nonexistent/jwks.json',
  AUTH_ISSUER: 'openapi',
  AUTH_TOKEN_DIR: '/nonexistent/tokens',
  AUTH_POLICY: '/nonexistent/policy.yaml',
  GRANT_SIGNING_KEYS: '/nonexistent/grant-keys.json',
  GRANT_JWKS: '/nonexistent/grant-keys.jwks.json',
  INSTRUCTION_SIGNING_KEYS: '/nonexistent/instruction-keys.json',
  INSTRUCTION_JWKS: '/nonexistent/instruction-keys.jwks.json',
  RECEIPT_SIGNING_KEYS: '/nonexistent/receipt-keys.json',
  RECEIPT_JWKS: '/nonexistent/receipt-keys.jwks.json',
  OWNER_ID: 'openapi',
  LOCKDB_URL: 'postgres://openapi@127.0.0.1:1/lockdb',
  PAYDB_URL: 'postgres://openapi@127.0.0.1:1/paydb',
  PROXYDB_URL: 'postgres://openapi@127.0.0.1:1/proxydb',
  LOG_LEVEL: 'silent',
};

type EntryModule = Type<unknown> | DynamicModule | Promise<DynamicModule>;

/** Every app with an HTTP surface, as its main.ts serves it (name = token audience). */
export const OPENAPI_APPS: Record<
  string,
  {
    module: () => EntryModule;
    authenticated: boolean;
    publishesKeys?: boolean;
    rateLimited?: boolean;
  }
> = {
  'lock-server': {
    module: () => LockServerModule.forRoot({ env: ENV }),
    authenticated: true,
    publishesKeys: true,
  },
  'payment-resource': {
    module: () => PaymentResourceModule.forRoot({ env: ENV }),
    authenticated: true,
    publishesKeys: true,
    rateLimited: true,
  },
  'rail-proxy': {
    module: () => RailProxyModule.forRoot({ env: ENV }),
    authenticated: true,
    // Rail receipts (docs/rail.md, "Receipts").
    publishesKeys: true,
    rateLimited: true,
  },
  'rail-stub': { module: () => RailStubModule.forRoot({ env: ENV }), authenticated: false },
  executor: { module: () => ExecutorModule.forRoot({ env: ENV }), authenticated: true },
  reconciler: { module: () => ReconcilerModule.forRoot({ env: ENV }), authenticated: true },
};

/** One app's document, from its module graph in preview mode: no port, no database. */
export async function openApiDocument(name: string): Promise<OpenAPIObject> {
  const entry = OPENAPI_APPS[name];
  const app = await NestFactory.create(await entry.module(), {
    preview: true,
    logger: false,
    abortOnError: false,
  });
  try {
    return buildOpenApiDocument(app, {
      name,
      authenticated: entry.authenticated,
      publishesKeys: entry.publishesKeys,
      rateLimited: entry.rateLimited,
    });
  } finally {
    await app.close();
  }
}

/** The committed form: two-space JSON with a final newline. */
export function documentText(doc: OpenAPIObject): string {
  return `${JSON.stringify(doc, null, 2)}\n`;
}
