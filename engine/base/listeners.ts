/** A set of listeners of one event: add returns the function that removes the listener again. */
export class Listeners<Args extends unknown[]> {
  private readonly set = new Set<(...args: Args) => void>();

  add(listener: (...args: Args) => void): () => void {
    this.set.add(listener);
    return () => this.set.delete(listener);
  }

  emit(...args: Args): void {
    for (const listener of this.set) listener(...args);
  }
}
