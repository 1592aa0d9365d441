import { timestampFormatter } from "@posts/adapters-http";
import { aPost, aUser } from "@posts/domain/testing";
import { describe, expect, it } from "vitest";
import { TIMESTAMP } from "./support/expectations.js";
import { tokenFor } from "./support/mint-token.js";
import { buildTestApp } from "./support/test-app.js";

describe("timestampFormatter", () => {
  const instant = new Date("2026-11-22T15:04:05.007Z");

  it("formats UTC as yyyy-MM-ddTHH:mm:ss.SSS, always with milliseconds", () => {
    expect(timestampFormatter("UTC")(instant)).toBe("2026-11-22T15:04:05.007");
    expect(timestampFormatter("UTC")(new Date("2026-01-01T00:00:00.000Z"))).toBe("2026-01-01T00:00:00.000");
    expect(timestampFormatter("Etc/UTC")(instant)).toBe("2026-11-22T15:04:05.007");
  });

  it("converts to the zone, across a day boundary", () => {
    expect(timestampFormatter("Asia/Seoul")(instant)).toBe("2026-11-23T00:04:05.007");
    expect(timestampFormatter("Asia/Kathmandu")(instant)).toBe("2026-11-22T20:49:05.007");
    expect(timestampFormatter("America/St_Johns")(instant)).toBe("2026-11-22T11:34:05.007");
  });

  it("follows daylight saving time", () => {
    const newYork = timestampFormatter("America/New_York");
    expect(newYork(new Date("2026-07-01T12:00:00.999Z"))).toBe("2026-07-01T08:00:00.999");
    expect(newYork(new Date("2026-12-01T12:00:00.000Z"))).toBe("2026-12-01T07:00:00.000");
    // 00:00 local is 24 in some formatters' hour cycle; never here.
    expect(newYork(new Date("2026-12-01T05:00:00.000Z"))).toBe("2026-12-01T00:00:00.000");
  });

  it("matches the contract's pattern for many instants in several zones", () => {
    for (const zone of ["UTC", "Asia/Seoul", "Pacific/Chatham", "America/Los_Angeles"]) {
      const format = timestampFormatter(zone);
      for (let i = 0; i < 200; i++) {
        const date = new Date(Date.UTC(2000, 0, 1) + i * 7_919_876_543);
        expect(format(date)).toMatch(TIMESTAMP);
      }
    }
  });

  it("throws a RangeError for an unknown zone", () => {
    expect(() => timestampFormatter("Nowhere/Special")).toThrow(RangeError);
  });
});

describe("timestamps on the wire", () => {
  it("are in the app's time zone: posts, users and error envelopes", async () => {
    const { app, deps } = await buildTestApp({ timeZone: "Asia/Seoul" });
    const author = await aUser(deps.users, { createdAt: new Date("2026-11-22T15:30:00.000Z") });
    const post = await aPost(deps.posts, author, { createdAt: new Date("2026-11-22T15:04:05.007Z") });
    const read = (await app.inject({ method: "GET", url: `/api/v1/posts/${post.id}` })).json();
    expect(read.createdAt).toBe("2026-11-23T00:04:05.007");
    expect(read.updatedAt).toBe("2026-11-23T00:04:05.007");
    const me = await app.inject({
      method: "GET",
      url: "/api/v1/user",
      headers: { "x-auth-token": tokenFor(author) },
    });
    expect(me.json().createdAt).toBe("2026-11-23T00:30:00.000");
    // The envelope is stamped with the clock (2026-11-22T10:15:30.123Z), in the same zone.
    const missing = (await app.inject({ method: "GET", url: "/nowhere" })).json();
    expect(missing.timestamp).toBe("2026-11-22T19:15:30.123");
    await app.close();
  });
});
