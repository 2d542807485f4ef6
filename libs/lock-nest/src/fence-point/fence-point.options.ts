import { ConfigurableModuleBuilder } from '@nestjs/common';

/** What a floor raise did: moved the memory, found it at or past the floor, or found nothing to fence. */
export type FenceFloorResult = 'raised' | 'unchanged' | 'not_found';

export interface FenceFloorRaise {
  result: FenceFloorResult;
  /** The memory before the raise; null when there was none. */
  before: bigint | null;
  /** The memory after it; null when there is none. */
  after: bigint | null;
}

/**
 * The port of a fence point's memory for one key prefix: what a write under a
 * grant is checked against, raised here to a revocation's floor. `raise` is ONE
 * conditional statement that never lowers the memory. `TableFenceFloors` of
 * `@dlock/persistence` is the one for a table fenced by `fencedUpdate`;
 * dlock's payout guards bind their own (the account fence, the rail high-water mark).
 */
export abstract class FenceFloors {
  /** The lock keys this memory is guarded by, e.g. `refund:` for `refund:{id}`. */
  abstract readonly prefix: string;
  /** `id` is the lock key without the prefix. */
  abstract raise(id: string, floor: bigint): Promise<FenceFloorRaise>;
}

/** One raise as audited: the notice's attribution, and what moved. */
export interface FloorRaiseAudit extends FenceFloorRaise {
  key: string;
  floor: bigint;
  revocationId: string;
  requestedBy: string;
  approvedBy: string | null;
  /** Who presented the notice (X-Operator), when it said. */
  operator: string | null;
  reason: string | null;
}

/** A notice refused: nothing was raised. `reason` is the ProofRejectedError's. */
export interface NoticeRefusal {
  reason: string;
  key: string | null;
  operator: string | null;
}

/**
 * Where raises and refusals are reported. Left out, they are Nest Logger
 * lines (`fence_floor_raised` warn, `fence_floor_unchanged`, `proof_rejected`
 * warn); dlock's own services pass their safety events and metrics.
 */
export interface FencePointEvents {
  raised(audit: FloorRaiseAudit): void;
  refused(refusal: NoticeRefusal): void;
}

export interface FencePointModuleOptions {
  /**
   * The lock-server's revocation keys, read offline: a JWKS file path (the
   * lock-server's GRANT_JWKS, mounted) or an http(s) URL of it.
   */
  jwks: string;
  /** One memory per key prefix; a key matching none is not this fence point's (404). */
  floors: FenceFloors[];
  events?: FencePointEvents;
}

/** The route a fence point answers on (static: Nest reads routes before any factory runs). */
export interface FencePointRoute {
  /** Default `v1/revocation-notices`. */
  path?: string;
  /**
   * Extra decorators of the route's handler, e.g. an authorisation or
   * OpenAPI decorator of the app's own. `false` mounts no route: the app
   * calls `FencePointService` from routes of its own.
   */
  decorators?: MethodDecorator[] | false;
}

export const {
  ConfigurableModuleClass: ConfigurableFencePointModule,
  MODULE_OPTIONS_TOKEN: FENCE_POINT_MODULE_OPTIONS,
  OPTIONS_TYPE: FENCE_POINT_OPTIONS_TYPE,
  ASYNC_OPTIONS_TYPE: FENCE_POINT_ASYNC_OPTIONS_TYPE,
} = new ConfigurableModuleBuilder<FencePointModuleOptions>()
  .setClassMethodName('forRoot')
  .setExtras<{ route?: FencePointRoute }>({ route: {} }, (definition) => definition)
  .build();
