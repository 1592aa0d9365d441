import type { PostCacheStats } from "@posts/adapters-http";
import type { Post } from "@posts/domain";
import { describe, expect, it } from "vitest";
import { buildTestApp } from "../support/test-app.js";

/** A cache as the composition root hands it over: a class whose methods read private fields. */
class PrivateCounts {
  readonly #hits = 7;
  holds(_post: Post): boolean {
    return false;
  }
  stats(): PostCacheStats {
    return { hits: this.#hits, misses: 1, pagesThroughCache: 2, pagesInFull: 0, posts: 3, bytes: 300 };
  }
}

describe("GET /metrics with the post cache a class instance", () => {
  it("reads its counts through the instance (its methods keep their `this`)", async () => {
    const { app } = await buildTestApp({ postCache: new PrivateCounts() });
    const response = await app.inject({ method: "GET", url: "/metrics" });
    expect(response.statusCode).toBe(200);
    expect(response.body).toContain('post_cache_lookups_total{result="hit"} 7');
    await app.close();
  });
});
