/** The record of the log view (log/reader.ts), a leaf of services/types.ts that datasets read too. */
/** One event of a collection's log, as the outbound Kafka stream serves it. */
export interface LogRecord {
  /** Position in the collection's log: the Kafka offset. */
  readonly offset: number;
  /** svc.id, the record key. */
  readonly id: string;
  /** svc.created_at in ms, the record timestamp. */
  readonly createdAtMs: number;
  /** The stored event JSON, enriched, with its svc object; empty when `matches` is false. */
  readonly json: string;
  /** Set when the read was given filters: whether the event passes them. */
  readonly matches?: boolean;
}
