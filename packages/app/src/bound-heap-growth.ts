import { setFlagsFromString } from "node:v8";

/** How far past what the last full collection left alive the old generation may grow, with the post cache on. */
export const CACHED_HEAP_GROWTH_PERCENT = 25;

/**
 * Makes V8 start a full collection once its old generation has grown `percent` past what the
 * previous one left alive. V8's own rule allows up to four times that on a machine with much
 * memory: with the post cache holding tens of megabytes for the life of the process, the heap
 * grew to several times the cache before anything was collected, and the RSS with it. What gets
 * collected more often is garbage that V8 allocates in the old generation directly (such as the
 * decimal text of the numbers it keeps in its number-to-string cache); a full collection of a heap
 * of the cache's size takes a few milliseconds, every several seconds.
 */
export function boundHeapGrowth(percent: number): void {
  setFlagsFromString(`--heap-growing-percent=${percent}`);
}
