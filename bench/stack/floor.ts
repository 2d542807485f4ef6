/**
 * The framework floor of the stack bench (bench/reports/stack-cost.md): the
 * rail stub's POST /submit answered by a server with nothing of this
 * project's stack, built up one framework at a time (BENCH_FLOOR):
 *   http     node:http, the body read by hand, JSON.parse, JSON.stringify
 *   express  the same through express 5: router, express.text(), res.json
 *   nest     the same through Nest on express: a controller with @Body()
 *   fastify       the same through fastify 5: its router, JSON parser and serializer
 *   nest-fastify  the same controller through Nest on fastify (@nestjs/platform-fastify)
 * What the real rail stub costs beyond `nest` is the project's own stack; the
 * two fastify rows say what the HTTP platform itself costs (bench/reports/stack-cost.md).
 */
import 'reflect-metadata';
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { Body, Controller, Get, HttpCode, Module, Post } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import Fastify from 'fastify';
import express, { text, type NextFunction, type Request, type Response } from 'express';

const PORT = Number(process.env.PORT ?? 0);
const LIMIT = 64 * 1024;

function answer(body: { clientRef?: unknown }) {
  return {
    railReference: `rr-${randomUUID()}`,
    acceptedAt: new Date().toISOString(),
    ref: body.clientRef,
  };
}

function bareHttp(): void {
  const server = http.createServer((req, res) => {
    if (req.url === '/health/live') {
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"ok"}');
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { clientRef?: unknown };
      const out = JSON.stringify(answer(body));
      res.writeHead(200, {
        'content-type': 'application/json; charset=utf-8',
        'content-length': Buffer.byteLength(out),
      });
      res.end(out);
    });
  });
  server.listen(PORT, '127.0.0.1');
}

function jsonBody(req: Request, _res: Response, next: NextFunction): void {
  req.body = typeof req.body === 'string' && req.body !== '' ? JSON.parse(req.body) : undefined;
  next();
}

function bareExpress(): void {
  const app = express();
  // As applyHttpContract sets it (libs/http-contract/src/bootstrap.ts).
  app.disable('x-powered-by');
  app.set('etag', false);
  app.use(text({ type: () => true, limit: LIMIT, inflate: false }));
  app.use(jsonBody);
  app.get('/health/live', (_req, res) => void res.json({ status: 'ok' }));
  app.post('/submit', (req, res) => void res.json(answer(req.body as { clientRef?: unknown })));
  app.listen(PORT, '127.0.0.1');
}

@Controller()
class FloorController {
  @Post('submit')
  @HttpCode(200)
  submit(@Body() body: { clientRef?: unknown }) {
    return answer(body);
  }

  @Get('health/live')
  live() {
    return { status: 'ok' };
  }
}

@Module({ controllers: [FloorController] })
class FloorModule {}

async function bareNest(): Promise<void> {
  const app = await NestFactory.create<NestExpressApplication>(FloorModule, {
    bodyParser: false,
    logger: false,
  });
  app.disable('x-powered-by');
  app.set('etag', false);
  app.use(text({ type: () => true, limit: LIMIT, inflate: false }));
  app.use(jsonBody);
  await app.listen(PORT, '127.0.0.1');
}

function bareFastify(): void {
  const app = Fastify({ logger: false, bodyLimit: LIMIT });
  app.get('/health/live', () => ({ status: 'ok' }));
  app.post('/submit', (req) => answer(req.body as { clientRef?: unknown }));
  void app.listen({ port: PORT, host: '127.0.0.1' });
}

async function nestOnFastify(): Promise<void> {
  const app = await NestFactory.create<NestFastifyApplication>(
    FloorModule,
    new FastifyAdapter({ bodyLimit: LIMIT }),
    { logger: false },
  );
  await app.listen(PORT, '127.0.0.1');
}

switch (process.env.BENCH_FLOOR) {
  case 'http':
    bareHttp();
    break;
  case 'express':
    bareExpress();
    break;
  case 'fastify':
    bareFastify();
    break;
  case 'nest-fastify':
    void nestOnFastify();
    break;
  default:
    void bareNest();
}
