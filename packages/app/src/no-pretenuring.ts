import { setFlagsFromString } from "node:v8";

/**
 * Turns off V8's allocation-site pretenuring for the allocations to come: every new object is
 * then made in the young generation, where the short-lived ones die in the next scavenge.
 *
 * Why: V8 pretenures an allocation site (allocates its objects in the old generation at once)
 * when most of its objects lived through a scavenge. The service's statement path (pg's query,
 * its result, its rows and the closures that wait for them) got pretenured so: from then on each
 * GET's objects, dead within a millisecond, went to the old generation, were freed only by full
 * collections, and kept the young objects they pointed to alive through scavenges, each of which
 * then copied megabytes. At one connection that was 16 µs of garbage collection per GET against
 * 2 µs without it, and the full collections came every second.
 */
export function stopAllocationSitePretenuring(): void {
  setFlagsFromString("--no-allocation-site-pretenuring");
}
