import { Controller, Get, Header } from '@nestjs/common';
import { register } from 'prom-client';

/**
 * Prometheus' scrape of prom-client's default registry, where SafetyEvents counts (docs/extending.md,
 * "Your own error codes and safety events"); a team with its own metrics route keeps it instead.
 */
@Controller('metrics')
export class MetricsController {
  @Get()
  @Header('Content-Type', register.contentType)
  metrics(): Promise<string> {
    return register.metrics();
  }
}
