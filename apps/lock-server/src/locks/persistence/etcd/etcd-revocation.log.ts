import { SortOrder, SortTarget } from 'etcd3';
import { parseFencingToken } from '@dlock/lock-api';
import { RevocationLog, type RevocationEntry } from '../revocation-log.port';
import { rangeAt, type EtcdGateway } from './etcd.gateway';
import { prefixEnd } from './etcd-keys.codec';
import type { RevocationRecord } from './etcd-values.codec';

/**
 * The `revocation/<key>/<id>` records (docs/lock-server-etcd.md). Each is put
 * in the revoke's own transaction, so its mod revision IS the newTokenFloor,
 * and etcd revisions are visible in order: no late arrivals below a cursor.
 */
export class EtcdRevocationLog extends RevocationLog {
  constructor(private readonly gw: EtcdGateway) {
    super();
  }

  override async list(afterFloor: bigint, limit: number): Promise<RevocationEntry[]> {
    const prefix = this.gw.keys.allRevocationsPrefix();
    const res = await this.gw.read(
      [
        {
          request_range: {
            key: prefix,
            range_end: prefixEnd(prefix),
            min_mod_revision: (afterFloor + 1n).toString(),
            sort_order: SortOrder.Ascend,
            sort_target: SortTarget.Mod,
            limit,
          },
        },
      ],
      this.gw.deadline(),
    );
    return rangeAt(res, 0).map((kv) => {
      const record = JSON.parse(kv.value.toString()) as RevocationRecord;
      const id = kv.key.toString().slice(kv.key.toString().lastIndexOf('/') + 1);
      return {
        revocationId: id,
        key: record.key,
        revokedToken: parseFencingToken(record.revokedToken, 'revokedToken'),
        newTokenFloor: parseFencingToken(kv.mod_revision, 'mod_revision'),
        operator: record.operator,
        reason: record.reason,
        revokedAt: new Date(record.revokedAt),
      };
    });
  }
}
