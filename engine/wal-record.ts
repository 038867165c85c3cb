/**
 * The payload of one WAL record: the events of one append call, msgpack-encoded. Each event carries
 * its collection's log offset, so replay can skip rows a flush already put in segments.
 */
import { pack, unpack } from 'msgpackr';

export interface WalEvent {
  /** Collection. */
  readonly c: string;
  /** Log offset (seq). */
  readonly s: number;
  /** svc.timestamp, ms. */
  readonly t: number;
  /** svc.created_at, ms. */
  readonly a: number;
  /** The stored JSON. */
  readonly j: string;
  /** Uniqueness token, or null. */
  readonly k: string | null;
}

export interface WalPayload {
  /** Project id. */
  readonly p: string;
  readonly e: readonly WalEvent[];
}

export function encodeWalPayload(payload: WalPayload): Uint8Array {
  return pack(payload);
}

export function decodeWalPayload(bytes: Uint8Array): WalPayload {
  return unpack(bytes) as WalPayload;
}
