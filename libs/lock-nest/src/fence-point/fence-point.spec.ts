import { testRevocationNotice, testSigningKeys } from '@dlock/testing';
import { FenceFloors, type FenceFloorRaise, type FloorRaiseAudit } from './fence-point.options';
import { parsePresentedNotice } from './fence-point.controller';
import { FencePointService } from './fence-point.service';

/** A memory that records what it was asked to raise. */
class Recorded extends FenceFloors {
  readonly raised: [string, bigint][] = [];
  constructor(readonly prefix: string) {
    super();
  }
  async raise(id: string, floor: bigint): Promise<FenceFloorRaise> {
    this.raised.push([id, floor]);
    return { result: 'raised', before: 0n, after: floor };
  }
}

describe('FencePointService', () => {
  const refunds = new Recorded('refund:');
  const eu = new Recorded('refund:eu:');
  const audits: FloorRaiseAudit[] = [];
  const refusals: string[] = [];
  let service: FencePointService;

  beforeAll(async () => {
    service = new FencePointService({
      jwks: testSigningKeys().grants.jwks,
      floors: [refunds, eu],
      events: { raised: (a) => audits.push(a), refused: (r) => refusals.push(r.reason) },
    });
    await service.onModuleInit();
  });

  const presented = (notice: string | undefined) => ({ notice, operator: null, reason: null });

  it('raises the memory of the longest prefix the notice’s key starts with, to its floor', async () => {
    const notice = testRevocationNotice({ key: 'refund:eu:r-1', floor: 2n ** 60n });
    const out = await service.raise(presented(notice));
    expect(out).toMatchObject({ key: 'refund:eu:r-1', floor: 2n ** 60n, result: 'raised' });
    expect(eu.raised).toEqual([['r-1', 2n ** 60n]]);
    expect(refunds.raised).toEqual([]);
    expect(audits).toMatchObject([{ key: 'refund:eu:r-1', requestedBy: 'operator-alice' }]);
  });

  it('a key of no prefix it serves is 404 NOT_FOUND; nothing raised', async () => {
    const notice = testRevocationNotice({ key: 'invoice:i-1', floor: 9n });
    await expect(service.raise(presented(notice))).rejects.toMatchObject({ code: 'NOT_FOUND' });
    expect(refunds.raised).toEqual([]);
  });

  it('no notice, or one for another floor, is PROOF_REJECTED and reported; nothing raised', async () => {
    await expect(service.raise(presented(undefined))).rejects.toMatchObject({
      code: 'PROOF_REJECTED',
    });
    const notice = testRevocationNotice({ key: 'refund:r-2', floor: 9n });
    await expect(service.raise(presented(notice), { floor: 10n })).rejects.toMatchObject({
      code: 'PROOF_REJECTED',
      details: { reason: 'mismatch' },
    });
    expect(refusals).toEqual(['missing', 'mismatch']);
    expect(refunds.raised).toEqual([]);
  });
});

describe('parsePresentedNotice', () => {
  it('takes the notice, a reason and the X-Operator', () => {
    expect(parsePresentedNotice({ notice: 'a.b.c', reason: 'worker hung' }, 'lock-server')).toEqual(
      {
        notice: 'a.b.c',
        operator: 'lock-server',
        reason: 'worker hung',
      },
    );
  });

  it('names every bad field in one 400', () => {
    let fields: unknown;
    try {
      parsePresentedNotice({ notice: 7, reason: 'short' }, '\u0000');
    } catch (err) {
      fields = (err as { details?: { fields?: { field: string }[] } }).details?.fields;
    }
    expect(fields).toEqual([
      expect.objectContaining({ field: 'notice' }),
      expect.objectContaining({ field: 'reason' }),
      expect.objectContaining({ field: 'X-Operator' }),
    ]);
  });
});
