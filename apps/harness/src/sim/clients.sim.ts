import {
  HOP_BUDGETS,
  PeerUnavailableError,
  peerUnavailable,
  withHopRetries,
  type CallBudget,
  type HopKind,
} from '@dlock/http-client';
import type { FenceCredential } from '@dlock/lock-api';
import {
  PaymentResourceClient,
  RailProxyClient,
  type AckedSubmission,
  type ProxyRecord,
  type RailEvidence,
  type SubmitRequest,
} from '@dlock/payout-contract';
import {
  submitReadTimeoutMs,
  SUBMIT_CONNECT_TIMEOUT_MS,
} from '../../../executor/src/execution/domain/lease.rules';
import { SIM_EPOCH_MS, type SimProcess } from './scheduler.sim';
import type { World } from './worker.sim';

/** The executor's and the proxy's RAIL_READ_TIMEOUT_MS (config.ts default). */
export const RAIL_READ_TIMEOUT_MS = 8_000;
/** The executor's submit budget for that timeout (lease.rules.ts). */
const SUBMIT_BUDGET: CallBudget = {
  connectTimeoutMs: SUBMIT_CONNECT_TIMEOUT_MS,
  readTimeoutMs: submitReadTimeoutMs(RAIL_READ_TIMEOUT_MS),
};

/**
 * One call of `proc` to a guard over the simulated network, through the hop
 * retry layer the real clients use (withHopRetries: which failures of `kind`
 * are sent again), its waits on the process's virtual clock.
 */
function simHop<T>(
  w: World,
  proc: SimProcess,
  peer: 'payment-resource' | 'rail-proxy',
  kind: HopKind,
  budget: CallBudget,
  handler: () => Promise<T>,
): Promise<T> {
  return withHopRetries(
    kind,
    () => w.net.call(proc, handler, budget, (p, m) => peerUnavailable(peer, p, m)),
    undefined,
    (ms, signal) => proc.sleep(ms, signal),
  );
}

/**
 * payment-resource as the executor's client sees it, over the simulated
 * network: the real client's methods, each answered by the guard (the model
 * or the real service) with the hop kind the real client gives it. Bypassed:
 * the wire encoding.
 */
export abstract class SimPaymentResource extends PaymentResourceClient {
  constructor(
    protected readonly w: World,
    protected readonly proc: SimProcess,
  ) {
    super('http://payment-resource.sim', proc.name);
  }

  protected exchange<T>(kind: 'advisoryRead' | 'fencedWrite', handler: () => Promise<T>) {
    return simHop(this.w, this.proc, 'payment-resource', kind, HOP_BUDGETS[kind], handler);
  }
}

/**
 * rail-proxy and the rail stub behind it, as the executor's client sees them.
 * The broken variant `executor-retries-rail-timeout` re-sends a submit that
 * got no answer; every such re-send is recorded (NO-RESUBMIT).
 */
export abstract class SimRailProxy extends RailProxyClient {
  constructor(
    protected readonly w: World,
    protected readonly proc: SimProcess,
  ) {
    super('http://rail-proxy.sim', proc.name, SUBMIT_BUDGET);
  }

  /** R1 at the proxy, on virtual time. */
  protected abstract present(
    fence: FenceCredential,
    instruction: string,
    payout: SubmitRequest,
  ): Promise<AckedSubmission>;

  /** The proxy's records of a payout (R2), read in place. */
  protected abstract proxyRecords(payoutId: string): Promise<ProxyRecord[]>;

  override async submit(
    fence: FenceCredential,
    instruction: string,
    payout: SubmitRequest,
  ): Promise<AckedSubmission> {
    const tries = this.w.faults.retriesRailTimeout ? 2 : 1;
    const key = `${payout.payoutId}@${fence.token}`;
    for (let i = 0; ; i++) {
      if (this.w.submitsUnknown.has(key)) {
        this.w.resubmits.push(`${key}: presented again after a submit with no answer (FR-23)`);
      }
      try {
        return await simHop(this.w, this.proc, 'rail-proxy', 'submit', SUBMIT_BUDGET, () =>
          this.present(fence, instruction, payout),
        );
      } catch (err) {
        const noAnswer = err instanceof PeerUnavailableError && err.phase === 'response';
        if (noAnswer) this.w.submitsUnknown.add(key);
        if (!noAnswer || i + 1 >= tries) throw err;
      }
    }
  }

  override records(payoutId: string): Promise<ProxyRecord[]> {
    const budget = HOP_BUDGETS.advisoryRead;
    return simHop(this.w, this.proc, 'rail-proxy', 'advisoryRead', budget, () =>
      this.proxyRecords(payoutId),
    );
  }

  /** R3: the rail's record as the proxy reads it: a transfer once the rail paid the acked submission. */
  override async evidence(payoutId: string): Promise<RailEvidence> {
    const acked = (await this.proxyRecords(payoutId)).find((r) => r.railReference !== null);
    const paid = (this.w.rail.paid.get(payoutId) ?? 0) > 0;
    const at = new Date(SIM_EPOCH_MS + this.w.sched.now).toISOString();
    return {
      payoutId,
      lookup: {
        clientRef: payoutId,
        asOf: at,
        settlementWindowMs: null,
        transfers:
          paid && acked?.railReference
            ? [
                {
                  railReference: acked.railReference,
                  clientRef: payoutId,
                  amountMinor: 0,
                  currency: 'EUR',
                  acceptedAt: at,
                  settled: true,
                  settledAt: at,
                  duplicateOf: null,
                },
              ]
            : [],
      },
      railReceipt: paid && acked?.railReceipt ? acked.railReceipt : null,
    };
  }
}

/**
 * The rail stub on virtual time: it may hang past the proxy's read timeout
 * (and may have paid all the same), else it pays and acknowledges after a
 * while (most of a critical section is spent here).
 */
export async function railAnswer(w: World, payoutId: string): Promise<'acked' | 'ambiguous'> {
  if (w.random() < w.railTimeoutRate) {
    if (w.random() < 0.5) w.rail.pay(payoutId);
    await w.sched.sleep(RAIL_READ_TIMEOUT_MS);
    return 'ambiguous';
  }
  await w.sched.sleep(50 + Math.floor(w.random() * 2_000));
  w.rail.pay(payoutId);
  return 'acked';
}
