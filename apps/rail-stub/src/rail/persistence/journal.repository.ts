import {
  closeSync,
  existsSync,
  fdatasyncSync,
  mkdirSync,
  openSync,
  readFileSync,
  writeSync,
} from 'node:fs';
import { dirname } from 'node:path';

/** One transfer the rail accepted: money that moved. */
export interface TransferRecord {
  railReference: string;
  clientRef: string;
  amountMinor: number;
  currency: string;
  acceptedAt: string;
  /** Set when the rail booked this transfer a second time on its own (duplicate ack). */
  duplicateOf?: string;
}

function isTransferRecord(value: unknown): value is TransferRecord {
  const v = value as Partial<TransferRecord> | null;
  return (
    typeof v === 'object' &&
    v !== null &&
    typeof v.railReference === 'string' &&
    typeof v.clientRef === 'string' &&
    typeof v.amountMinor === 'number' &&
    typeof v.currency === 'string' &&
    typeof v.acceptedAt === 'string'
  );
}

/**
 * The rail's own record: an append-only JSON-lines file, one accepted transfer
 * per line, written (and by default fdatasync'd) before the caller hears
 * anything. Reloaded at start, so lookups survive restarts and SIGKILL. A torn
 * last line (crash mid-write) is skipped and sealed with a newline.
 */
export class Journal {
  private readonly byRef = new Map<string, TransferRecord[]>();
  private count = 0;
  private fd: number | undefined;
  readonly skippedLines: number;

  private constructor(
    readonly path: string,
    private readonly fsync: boolean,
  ) {
    mkdirSync(dirname(path), { recursive: true });
    let skipped = 0;
    let text = '';
    if (existsSync(path)) {
      text = readFileSync(path, 'utf8');
      for (const line of text.split('\n')) {
        if (line.trim() === '') continue;
        try {
          const parsed: unknown = JSON.parse(line);
          if (isTransferRecord(parsed)) this.index(parsed);
          else skipped++;
        } catch {
          skipped++;
        }
      }
    }
    this.skippedLines = skipped;
    this.fd = openSync(path, 'a');
    if (text.length > 0 && !text.endsWith('\n')) writeSync(this.fd, '\n');
  }

  static open(path: string, fsync: boolean): Journal {
    return new Journal(path, fsync);
  }

  /** Durable before it returns: the transfer exists from this point on. */
  append(record: TransferRecord): void {
    if (this.fd === undefined) throw new Error('journal is closed');
    writeSync(this.fd, `${JSON.stringify(record)}\n`);
    if (this.fsync) fdatasyncSync(this.fd);
    this.index(record);
  }

  lookup(clientRef: string): readonly TransferRecord[] {
    return this.byRef.get(clientRef) ?? [];
  }

  get size(): number {
    return this.count;
  }

  close(): void {
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
  }

  private index(record: TransferRecord): void {
    const list = this.byRef.get(record.clientRef);
    if (list) list.push(record);
    else this.byRef.set(record.clientRef, [record]);
    this.count++;
  }
}
