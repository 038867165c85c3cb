/**
 * The shape every add-on implements. An add-on is a pure function of its input values; the pipeline
 * owns configuration checks, path reads and the output write, so add-ons never see the event.
 */

export interface Addon {
  /** Keys of the add-on's `input` whose values are event paths; all of them are required. */
  readonly inputKeys: readonly string[];
  /**
   * The output object for the values read at those paths, in `inputKeys` order. A malformed value
   * (wrong type, unparsable) is not an error: it yields null fields, as each add-on documents.
   * The returned object is fresh on every call, so callers may store it in an event.
   */
  compute(values: readonly unknown[]): Record<string, unknown>;
  /**
   * compute's result, but one object for every input with the same result (ip_to_geo: one per
   * place, not per address), which no one may change. The pipeline keeps one cached result per
   * such object, so events from many addresses in one city share it down to the WAL record.
   */
  computeShared?(values: readonly unknown[]): Readonly<Record<string, unknown>>;
}
