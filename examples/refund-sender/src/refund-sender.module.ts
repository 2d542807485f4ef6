import { Module, type DynamicModule } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { LockClientModule, type LockClientModuleOptions } from '@dlock/lock-nest';
import { RefundSender } from './refund-sender.service';
import { MemoryRefundSink, RefundSink } from './refund-sink';

export interface RefundSenderAppOptions {
  databaseUrl: string;
  lock: LockClientModuleOptions;
  /** The payment network; the in-memory fake by default. */
  sink?: RefundSink;
}

/** The feature module: what a team adds for its own bounded context. */
@Module({ providers: [RefundSender], exports: [RefundSender] })
export class RefundModule {
  static register(sink: RefundSink): DynamicModule {
    return {
      module: RefundModule,
      providers: [{ provide: RefundSink, useValue: sink }],
    };
  }
}

/** The example app's root: its database (migrations run by the deployer), the lock client, the feature. */
@Module({})
export class RefundSenderAppModule {
  static forRoot(options: RefundSenderAppOptions): DynamicModule {
    return {
      module: RefundSenderAppModule,
      imports: [
        TypeOrmModule.forRoot({
          type: 'postgres',
          url: options.databaseUrl,
          synchronize: false,
          migrationsRun: false,
          entities: [],
          logging: ['error'],
        }),
        LockClientModule.forRoot(options.lock),
        RefundModule.register(options.sink ?? new MemoryRefundSink()),
      ],
    };
  }
}
