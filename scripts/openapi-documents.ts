import 'reflect-metadata';
import type { DynamicModule, Type } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { OpenAPIObject } from '@nestjs/swagger';
import { buildOpenApiDocument } from '@dlock/http-contract';
import { ExecutorModule } from '../apps/executor/src/app.module';
import { readExecutorConfig } from '../apps/executor/src/config';
import { lockServerAppModule } from '../apps/lock-server/src/app.module';
import { loadConfig } from '../apps/lock-server/src/config';
import { createAppModule as paymentResourceModule } from '../apps/payment-resource/src/app.module';
import { readPaymentConfig } from '../apps/payment-resource/src/config';
import { RailProxyModule } from '../apps/rail-proxy/src/app.module';
import { readRailProxyConfig } from '../apps/rail-proxy/src/config';
import { RailStubModule } from '../apps/rail-stub/src/app.module';
import { readRailStubConfig } from '../apps/rail-stub/src/config';
import { createAppModule as reconcilerModule } from '../apps/reconciler/src/app.module';
import { readReconcilerConfig } from '../apps/reconciler/src/config';

/**
 * A configuration for each app that only has to be valid: in preview mode
 * Nest instantiates no provider, so nothing connects to these URLs.
 */
const ENV = {
  AUTH_JWKS: '/nonexistent/jwks.json',
  AUTH_ISSUER: 'openapi',
  AUTH_TOKEN_DIR: '/nonexistent/tokens',
  OWNER_ID: 'openapi',
  LOCKDB_URL: 'postgres://openapi@127.0.0.1:1/lockdb',
  PAYDB_URL: 'postgres://openapi@127.0.0.1:1/paydb',
  PROXYDB_URL: 'postgres://openapi@127.0.0.1:1/proxydb',
  LOG_LEVEL: 'silent',
};

type EntryModule = Type<unknown> | DynamicModule;

/** Every app with an HTTP surface, as its main.ts serves it (name = token audience). */
export const OPENAPI_APPS: Record<string, { module: () => EntryModule; authenticated: boolean }> = {
  'lock-server': { module: () => lockServerAppModule(loadConfig(ENV)), authenticated: true },
  'payment-resource': {
    module: () => paymentResourceModule(readPaymentConfig(ENV)),
    authenticated: true,
  },
  'rail-proxy': {
    module: () => RailProxyModule.forRoot(readRailProxyConfig(ENV)),
    authenticated: true,
  },
  'rail-stub': {
    module: () => RailStubModule.forRoot(readRailStubConfig(ENV)),
    authenticated: false,
  },
  executor: { module: () => ExecutorModule.forRoot(readExecutorConfig(ENV)), authenticated: true },
  reconciler: {
    module: () => reconcilerModule(readReconcilerConfig(ENV)),
    authenticated: true,
  },
};

/** One app's document, from its module graph in preview mode: no port, no database. */
export async function openApiDocument(name: string): Promise<OpenAPIObject> {
  const entry = OPENAPI_APPS[name];
  const app = await NestFactory.create(entry.module(), {
    preview: true,
    logger: false,
    abortOnError: false,
  });
  try {
    return buildOpenApiDocument(app, { name, authenticated: entry.authenticated });
  } finally {
    await app.close();
  }
}

/** The committed form: two-space JSON with a final newline. */
export function documentText(doc: OpenAPIObject): string {
  return `${JSON.stringify(doc, null, 2)}\n`;
}
