import { Inject, Injectable, type OnModuleDestroy } from '@nestjs/common';
import { RailLookupClient, type RailLookup } from '@dlock/payout-contract';
import { RAIL_PROXY_CONFIG, type RailProxyConfig } from '../../config';

/** The rail's read-only record of a client reference (its lookup): never presents anything. */
@Injectable()
export class RailRecordClient implements OnModuleDestroy {
  private readonly client: RailLookupClient;

  constructor(@Inject(RAIL_PROXY_CONFIG) config: RailProxyConfig) {
    this.client = new RailLookupClient(config.RAIL_STUB_URL);
  }

  lookup(clientRef: string, signal?: AbortSignal): Promise<RailLookup> {
    return this.client.lookup(clientRef, signal);
  }

  onModuleDestroy(): void {
    this.client.close();
  }
}
