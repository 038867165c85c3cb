/**
 * svc.id values: 24 lowercase hex characters from a CSPRNG, drawn from a pooled buffer so the write
 * path does not pay one randomBytes call per event.
 */
import { randomBytes } from 'node:crypto';

const POOL_IDS = 4096;
const ID_BYTES = 12;

export class IdSource {
  private pool = randomBytes(POOL_IDS * ID_BYTES);
  private next = 0;

  take(): string {
    if (this.next === POOL_IDS) {
      this.pool = randomBytes(POOL_IDS * ID_BYTES);
      this.next = 0;
    }
    const start = this.next++ * ID_BYTES;
    return this.pool.toString('hex', start, start + ID_BYTES);
  }
}
