export * from './payout-protocol';
export * from './payout-types';
export * from './wire';
export type { FloorRaise, RaiseResult } from './hops';
export * from './payment-resource.client';
export * from './rail-proxy.client';
export * from './rail-lookup.client';
export * from './wire-schemas';
export * from './payout-instruction';
