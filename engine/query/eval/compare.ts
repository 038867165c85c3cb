/**
 * The one ordering of result values (group_by values, select_unique): numbers, then strings,
 * then booleans (false first), then lists (by JSON), then null last. Within a kind ascending.
 */
type Value = unknown;

function rank(value: Value): number {
  if (typeof value === 'number') return 0;
  if (typeof value === 'string') return 1;
  if (typeof value === 'boolean') return 2;
  if (Array.isArray(value)) return 3;
  return 4;
}

export function compareValues(a: Value, b: Value): number {
  const ra = rank(a);
  const rb = rank(b);
  if (ra !== rb) return ra - rb;
  switch (ra) {
    case 0: return (a as number) - (b as number);
    case 1: return (a as string) < (b as string) ? -1 : (a as string) > (b as string) ? 1 : 0;
    case 2: return Number(a) - Number(b);
    case 3: {
      const ja = JSON.stringify(a);
      const jb = JSON.stringify(b);
      return ja < jb ? -1 : ja > jb ? 1 : 0;
    }
    default: return 0;
  }
}
