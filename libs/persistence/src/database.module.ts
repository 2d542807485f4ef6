import {
  Module,
  type DynamicModule,
  type InjectionToken,
  type ModuleMetadata,
  type OnApplicationShutdown,
} from '@nestjs/common';
import { DataSource } from 'typeorm';
import { postgresDataSource, type DatabaseOptions } from './pool';
import { closeDataSource, initializeInBackground } from './startup';

/**
 * When the pool first connects:
 * - `at-start`: before the app listens, or, with the database down at boot, in
 *   the background while the app answers unready (initializeInBackground);
 * - `when-used`: by the first `connected(ds)`, each caller after a failure
 *   trying again at once (the reconciler's reads, under its own retry budget).
 */
export type DatabaseConnect = 'at-start' | 'when-used';

export interface DatabaseModuleOptions {
  imports?: ModuleMetadata['imports'];
  inject?: InjectionToken[];
  /**
   * The app's validated config → its database's settings (read once, at boot);
   * null: this optional database is not configured and `token` is null.
   */
  useFactory: (...deps: never[]) => DatabaseOptions | null;
  /** What is injected: `DataSource` (default), or the app's own token when it reads several databases. */
  token?: InjectionToken;
  /** Default `at-start`. */
  connect?: DatabaseConnect;
}

/** Closes the pool at shutdown, and stops a connection still being retried. */
class DatabaseLifecycle implements OnApplicationShutdown {
  constructor(private readonly dataSource: DataSource | null) {}

  async onApplicationShutdown(): Promise<void> {
    if (this.dataSource) await closeDataSource(this.dataSource);
  }
}

async function openDatabase(
  settings: DatabaseOptions | null,
  connect: DatabaseConnect,
): Promise<DataSource | null> {
  if (settings === null) return null;
  const ds = postgresDataSource(settings);
  switch (connect) {
    case 'at-start':
      return initializeInBackground(ds, { database: settings.database });
    case 'when-used':
      return ds;
    default: {
      const unknown: never = connect;
      throw new Error(`unknown DatabaseConnect ${String(unknown)}`);
    }
  }
}

/**
 * An app's database as an injectable `DataSource` (global), the one way dlock
 * wires one: made by postgresDataSource, connected as `connect` says, closed
 * at shutdown (after every other module's shutdown hook: global modules go
 * last). An app reading several databases imports one per database, each
 * under its own token.
 */
@Module({})
export class DatabaseModule {
  static forRootAsync(options: DatabaseModuleOptions): DynamicModule {
    const token = options.token ?? DataSource;
    const connect = options.connect ?? 'at-start';
    return {
      module: DatabaseModule,
      global: true,
      imports: options.imports ?? [],
      providers: [
        {
          provide: token,
          inject: options.inject ?? [],
          useFactory: (...deps: never[]) => openDatabase(options.useFactory(...deps), connect),
        },
        {
          provide: DatabaseLifecycle,
          inject: [token],
          useFactory: (ds: DataSource | null) => new DatabaseLifecycle(ds),
        },
      ],
      exports: [token],
    };
  }
}
