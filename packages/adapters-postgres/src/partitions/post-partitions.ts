/**
 * How many ids each partition of `posts` holds: partition `posts_p<k>` holds the ids from
 * `k * POSTS_PARTITION_SPAN + 1` up to `(k + 1) * POSTS_PARTITION_SPAN`. Fixed by the migration
 * that partitions the table (`0011_posts_partitioned_by_id_ranges`), which writes it out itself.
 */
export const POSTS_PARTITION_SPAN = 131_072;

/**
 * The partition `k` that holds `id`: ids start at 1, and each partition holds
 * {@link POSTS_PARTITION_SPAN} of them.
 */
export function partitionOf(id: number): number {
  return Math.floor((id - 1) / POSTS_PARTITION_SPAN);
}
