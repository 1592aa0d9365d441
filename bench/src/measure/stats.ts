/** The median of `values` (the mean of the middle two for an even count); NaN when empty. */
export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1
    ? (sorted[mid] as number)
    : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

/**
 * The `p`-th percentile (0–100) of `sorted` (ascending) by the nearest-rank method, the
 * definition HdrHistogram and autocannon use; NaN when empty.
 */
export function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1] as number;
}

/** A growable list of latencies in milliseconds. */
export class Samples {
  private data = new Float64Array(1 << 16);
  private count = 0;

  add(value: number): void {
    if (this.count === this.data.length) {
      const bigger = new Float64Array(this.data.length * 2);
      bigger.set(this.data);
      this.data = bigger;
    }
    this.data[this.count++] = value;
  }

  addAll(other: Samples): void {
    for (let i = 0; i < other.count; i++) this.add(other.data[i] as number);
  }

  get length(): number {
    return this.count;
  }

  /** The samples in ascending order. */
  sorted(): Float64Array {
    return this.data.slice(0, this.count).sort();
  }
}

/**
 * The smallest and largest of `values` (Infinity and -Infinity when empty). `Math.min(...values)`
 * overflows the stack beyond about 100,000 values, which a soak's request records exceed.
 */
export function extent(values: Iterable<number>): { readonly min: number; readonly max: number } {
  let min = Number.POSITIVE_INFINITY;
  let max = Number.NEGATIVE_INFINITY;
  for (const value of values) {
    if (value < min) min = value;
    if (value > max) max = value;
  }
  return { min, max };
}
