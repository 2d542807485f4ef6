import { ConfigService } from '@nestjs/config';
import { NestFactory } from '@nestjs/core';
import { RefundSenderAppModule } from './refund-sender.module';

async function bootstrap(): Promise<void> {
  const app = await NestFactory.create(RefundSenderAppModule);
  // SIGTERM runs the shutdown hooks: the lock session closes and its locks are released.
  app.enableShutdownHooks();
  await app.listen(app.get(ConfigService).get<string>('PORT') ?? 3000);
}

void bootstrap();
