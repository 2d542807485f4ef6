import {
  Inject,
  Module,
  type DynamicModule,
  type InjectionToken,
  type ModuleMetadata,
  type OnApplicationShutdown,
} from '@nestjs/common';
import { DataSource } from 'typeorm';
import { postgresDataSource, type DatabaseOptions } from './pool';
import { closeDataSource, initializeInBackground } from './startup';

export interface DatabaseModuleOptions {
  imports?: ModuleMetadata['imports'];
  inject?: InjectionToken[];
  /** The app's validated config → its database's settings (read once, at boot). */
  useFactory: (...deps: never[]) => DatabaseOptions;
}

/** Closes the pool at shutdown, and stops a connection still being retried. */
class DatabaseLifecycle implements OnApplicationShutdown {
  constructor(@Inject(DataSource) private readonly dataSource: DataSource) {}

  async onApplicationShutdown(): Promise<void> {
    await closeDataSource(this.dataSource);
  }
}

/**
 * An app's one database as the injectable `DataSource` (global): made by
 * postgresDataSource, connected before the app listens or, with the database
 * down at boot, in the background while the app answers unready
 * (initializeInBackground), closed at shutdown.
 */
@Module({})
export class DatabaseModule {
  static forRootAsync(options: DatabaseModuleOptions): DynamicModule {
    return {
      module: DatabaseModule,
      global: true,
      imports: options.imports ?? [],
      providers: [
        {
          provide: DataSource,
          inject: options.inject ?? [],
          useFactory: (...deps: never[]) => {
            const settings = options.useFactory(...deps);
            return initializeInBackground(postgresDataSource(settings), {
              database: settings.database,
            });
          },
        },
        DatabaseLifecycle,
      ],
      exports: [DataSource],
    };
  }
}
