import { cloudEventRenderer } from "@posts/adapters-http";
import { describe, expect, it } from "vitest";
import { expectEnvelope, JSON_UTF8 } from "../support/expectations.js";
import { buildTestApp, type TestApp, useTestApp } from "../support/test-app.js";

const EVENTS = "/api/v1/posts/events";

async function createPost(testApp: TestApp, token: string, title = "제목", content = "본문", key?: string) {
  const response = await testApp.app.inject({
    method: "POST",
    url: "/api/v1/posts",
    headers: { "x-auth-token": token, ...(key === undefined ? {} : { "idempotency-key": key }) },
    payload: { title, content },
  });
  expect(response.statusCode).toBe(201);
  return Number(response.headers.location?.toString().split("/").at(-1));
}

async function page(testApp: TestApp, query = "") {
  const response = await testApp.app.inject({ method: "GET", url: `${EVENTS}${query}` });
  return { response, body: response.statusCode === 200 ? response.json() : undefined };
}

describe("GET /api/v1/posts/events as JSON pages", () => {
  const testApp = useTestApp();

  it("answers a page, not a stream, to an Accept that gives text/event-stream q=0 or less than JSON", async () => {
    for (const accept of [
      "text/event-stream;q=0, application/json",
      "text/event-stream;q=0.5, application/json",
    ]) {
      const response = await testApp().app.inject({ method: "GET", url: EVENTS, headers: { accept } });
      expect(response.statusCode).toBe(200);
      expect(response.headers["content-type"]).toBe(JSON_UTF8);
      expect(response.json()).toStrictEqual({ events: expect.any(Array), next: expect.any(Number) });
    }
  }, 2000);

  it("lists each change as a CloudEvent whose data is the post exactly as GET by id writes it", async () => {
    const { token } = await testApp().aUserWithToken();
    const { body: before } = await page(testApp(), "?limit=1000");
    const start = before.next as number;
    testApp().deps.clock.set(new Date("2026-11-22T10:15:30.123Z"));
    const id = await createPost(testApp(), token, "안녕 😀", '본문\r\n"quoted"');
    const created = await testApp().app.inject({ method: "GET", url: `/api/v1/posts/${id}` });
    testApp().deps.clock.set(new Date("2026-11-22T10:15:31.456Z"));
    const patch = await testApp().app.inject({
      method: "PATCH",
      url: `/api/v1/posts/${id}`,
      headers: { "x-auth-token": token },
      payload: { title: "고침" },
    });
    expect(patch.statusCode).toBe(200);
    const removed = await testApp().app.inject({
      method: "DELETE",
      url: `/api/v1/posts/${id}`,
      headers: { "x-auth-token": token },
    });
    expect(removed.statusCode).toBe(204);

    const { response, body } = await page(testApp(), `?after=${start}`);
    expect(response.headers["content-type"]).toBe(JSON_UTF8);
    expect(response.headers["cache-control"]).toBe("no-cache");
    const head = (n: number, type: string) =>
      `{"specversion":"1.0","id":"${start + n}","source":"/api/v1/posts","type":"${type}","subject":"${id}",`;
    // Byte for byte: property order, the post's wire format, the UTC time with milliseconds.
    expect(response.body).toBe(
      `{"events":[` +
        `${head(1, "post.created")}"time":"2026-11-22T10:15:30.123Z","datacontenttype":"application/json","data":${created.body}},` +
        `${head(2, "post.updated")}"time":"2026-11-22T10:15:31.456Z","datacontenttype":"application/json","data":${patch.body}},` +
        `${head(3, "post.deleted")}"time":"${body.events[2].time}","datacontenttype":"application/json","data":{"id":${id}}}` +
        `],"next":${start + 3}}`,
    );
    expect(body.events[2].time).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
  });

  it("pages by after and limit; next is the last number listed, or after when none", async () => {
    const { token } = await testApp().aUserWithToken();
    const start = (await page(testApp(), "?limit=1000")).body.next as number;
    for (let i = 0; i < 5; i++) await createPost(testApp(), token, `t${i}`);
    const ids = (query: string) =>
      page(testApp(), query).then(({ body }) => ({
        ids: body.events.map((event: { id: string }) => Number(event.id)),
        next: body.next,
      }));
    expect(await ids(`?after=${start}&limit=2`)).toEqual({ ids: [start + 1, start + 2], next: start + 2 });
    expect(await ids(`?after=${start + 2}&limit=1000`)).toEqual({
      ids: [start + 3, start + 4, start + 5],
      next: start + 5,
    });
    expect(await ids(`?after=${start + 5}`)).toEqual({ ids: [], next: start + 5 });
    expect(await ids(`?after=${start + 500}`)).toEqual({ ids: [], next: start + 500 });
    // Default: from the first event, 100 at most.
    const all = await ids("");
    expect(all.ids[0]).toBe(1);
    expect(all.ids).toEqual(Array.from({ length: Math.min(100, start + 5) }, (_, i) => i + 1));
  });

  it("makes no event for a replayed creation or a refused write, and one per post of a deleted user", async () => {
    const user = await testApp().aUserWithToken();
    const other = await testApp().aUserWithToken();
    const id = await createPost(testApp(), user.token, "t", "c", "key-1");
    const mine = await createPost(testApp(), user.token, "t2", "c2");
    const start = (await page(testApp(), `?after=${id - 1}&limit=1000`)).body.next as number;
    await createPost(testApp(), user.token, "t", "c", "key-1");
    const refused = [
      await testApp().app.inject({
        method: "PATCH",
        url: `/api/v1/posts/${id}`,
        headers: { "x-auth-token": other.token },
        payload: { title: "x" },
      }),
      await testApp().app.inject({
        method: "PATCH",
        url: `/api/v1/posts/${id}`,
        headers: { "x-auth-token": user.token },
        payload: { title: "" },
      }),
      await testApp().app.inject({
        method: "DELETE",
        url: `/api/v1/posts/${id}`,
        headers: { "x-auth-token": other.token },
      }),
    ];
    // Someone else's post is 401 (the specification's mapping), an empty title 400.
    expect(refused.map((response) => response.statusCode)).toEqual([401, 400, 401]);
    const gone = await testApp().app.inject({
      method: "DELETE",
      url: "/api/v1/user",
      headers: { "x-auth-token": user.token },
    });
    expect(gone.statusCode).toBe(204);
    const { body } = await page(testApp(), `?after=${start}`);
    expect(
      body.events.map((event: { type: string; subject: string }) => [event.type, Number(event.subject)]),
    ).toEqual(
      expect.arrayContaining([
        ["post.deleted", id],
        ["post.deleted", mine],
      ]),
    );
    expect(body.events).toHaveLength(2);
  });

  it.each([
    ["?after=-1"],
    ["?after=abc"],
    ["?after=1.5"],
    ["?after="],
    ["?after=1e3"],
    ["?after=99999999999999999999"],
    ["?after=1&after=2"],
    ["?limit=0"],
    ["?limit=1001"],
    ["?limit=ten"],
    ["?limit="],
  ])("answers 400 for %s", async (query) => {
    const response = await testApp().app.inject({ method: "GET", url: `${EVENTS}${query}` });
    expectEnvelope(response, 400, EVENTS);
  });

  it("accepts the limits of the ranges", async () => {
    for (const query of ["?after=0", "?limit=1", "?limit=1000", `?after=${Number.MAX_SAFE_INTEGER}`]) {
      expect((await page(testApp(), query)).response.statusCode).toBe(200);
    }
  });

  it("answers PATCH and DELETE on the path as for any non-numeric post id", async () => {
    const { token } = await testApp().aUserWithToken();
    for (const method of ["PATCH", "DELETE"] as const) {
      for (const headers of [{}, { "x-auth-token": token }]) {
        const events = await testApp().app.inject({ method, url: EVENTS, headers, payload: { title: "x" } });
        const other = await testApp().app.inject({
          method,
          url: "/api/v1/posts/abc",
          headers,
          payload: { title: "x" },
        });
        expectEnvelope(events, 403, EVENTS);
        expect(events.statusCode).toBe(other.statusCode);
      }
    }
    const post = await testApp().app.inject({ method: "POST", url: EVENTS, payload: {} });
    expectEnvelope(post, 405, EVENTS);
  });
});

describe("GET /api/v1/posts/events pages of large posts", () => {
  const testApp = useTestApp();

  it("stop, after their first event, once their events hold 1 MiB of JSON; next continues them", async () => {
    const { token } = await testApp().aUserWithToken();
    const start = (await page(testApp(), "?limit=1000")).body.next as number;
    // Each quote is two bytes of JSON: a page cut by the posts' own bytes would list six of these.
    const quoted = '"'.repeat(200 * 1024);
    for (let i = 0; i < 7; i++) await createPost(testApp(), token, `q${i}`, quoted);
    await createPost(testApp(), token, "large", "x".repeat(2 * 1024 * 1024));
    const listed = async (after: number) => {
      const { response, body } = await page(testApp(), `?after=${after}&limit=1000`);
      const sizes = body.events.map((event: unknown) => Buffer.byteLength(JSON.stringify(event)));
      return {
        ids: body.events.map((event: { id: string }) => Number(event.id)),
        next: body.next,
        sizes,
        response,
      };
    };
    const first = await listed(start);
    expect(first.ids).toEqual([start + 1, start + 2, start + 3]);
    expect(first.next).toBe(start + 3);
    // Short of 1 MiB before its last event, past it with it.
    const sum = (sizes: number[]) => sizes.reduce((a, b) => a + b, 0);
    expect(sum(first.sizes.slice(0, -1))).toBeLessThan(1024 * 1024);
    expect(sum(first.sizes)).toBeGreaterThanOrEqual(1024 * 1024);
    expect((await listed(first.next)).ids).toEqual([start + 4, start + 5, start + 6]);
    expect((await listed(start + 6)).ids).toEqual([start + 7, start + 8]);
    // An event larger than the bound is listed alone, whole.
    const large = await listed(start + 7);
    expect(large.ids).toEqual([start + 8]);
    expect(large.sizes[0]).toBeGreaterThan(2 * 1024 * 1024);
    expect((await listed(start + 8)).ids).toEqual([]);
  });
});

describe("GET /api/v1/posts/events pages asked for at once", () => {
  it("read the log once for the same page, and once for each other page", async () => {
    const base = await buildTestApp();
    const { token } = await base.aUserWithToken();
    for (let i = 0; i < 3; i++) await createPost(base, token, `t${i}`);
    const events = base.deps.database.events;
    let reads = 0;
    let open = () => {};
    const gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    const testApp = await buildTestApp({
      changeEvents: {
        readAfter: async (after, limit, maxBytes) => {
          reads++;
          await gate;
          return events.readAfter(after, limit, maxBytes);
        },
        lastNumber: () => events.lastNumber(),
        subscribe: (listener) => events.subscribe(listener),
        deleteNumberedBefore: (before) => events.deleteNumberedBefore(before),
      },
    });
    try {
      const same = Array.from({ length: 10 }, () => page(testApp, "?after=0&limit=2"));
      const other = page(testApp, "?after=1&limit=2");
      await new Promise((resolve) => setTimeout(resolve, 100));
      open();
      const answers = await Promise.all(same);
      expect(answers.map(({ response }) => response.statusCode)).toEqual(answers.map(() => 200));
      expect(new Set(answers.map(({ response }) => response.body)).size).toBe(1);
      expect(answers[0]?.body.events.map((event: { id: string }) => event.id)).toEqual(["1", "2"]);
      expect((await other).body.events.map((event: { id: string }) => event.id)).toEqual(["2", "3"]);
      expect(reads).toBe(2);
      // Once read, a page is read again: it may have grown.
      await page(testApp, "?after=0&limit=2");
      expect(reads).toBe(3);
    } finally {
      await testApp.app.close();
      await base.app.close();
    }
  });
});

describe("GET /api/v1/posts/events past the retention", () => {
  it("answers 410 Gone for a page that starts before the oldest event kept", async () => {
    const testApp = await buildTestApp();
    try {
      const { token } = await testApp.aUserWithToken();
      for (let i = 0; i < 4; i++) await createPost(testApp, token, `t${i}`);
      expect(await testApp.deps.database.events.deleteNumberedBefore(new Date(Date.now() + 60_000))).toBe(3);
      for (const after of [0, 1, 2]) {
        expectEnvelope(
          await testApp.app.inject({ method: "GET", url: `${EVENTS}?after=${after}` }),
          410,
          EVENTS,
        );
      }
      const { body } = await page(testApp, "?after=3");
      expect(body.events.map((event: { id: string }) => event.id)).toEqual(["4"]);
    } finally {
      await testApp.app.close();
    }
  });
});

describe("the feed in OpenAPI", () => {
  const testApp = useTestApp();

  it("documents both representations, the query, the headers and every status", async () => {
    const document = (await testApp().app.inject({ method: "GET", url: "/openapi.json" })).json();
    const operation = document.paths[EVENTS].get;
    expect(Object.keys(operation.responses).sort()).toEqual([
      "200",
      "400",
      "401",
      "410",
      "429",
      "500",
      "503",
    ]);
    expect(Object.keys(operation.responses["200"].content).sort()).toEqual([
      "application/json",
      "text/event-stream",
    ]);
    expect(Object.keys(operation.responses["200"].headers).sort()).toEqual([
      "Cache-Control",
      "X-Accel-Buffering",
    ]);
    // The page and its events are named shapes: the operation refers to them in components.
    const named = (schema: { $ref?: string }) =>
      document.components.schemas[schema.$ref?.replace("#/components/schemas/", "") ?? ""];
    const page = named(operation.responses["200"].content["application/json"].schema);
    expect(Object.keys(page.properties)).toEqual(["events", "next"]);
    expect(Object.keys(named(page.properties.events.items).properties)).toEqual([
      "specversion",
      "id",
      "source",
      "type",
      "subject",
      "time",
      "datacontenttype",
      "data",
    ]);
    const parameters = operation.parameters.map(
      (parameter: { in: string; name: string }) => `${parameter.in} ${parameter.name}`,
    );
    expect(parameters).toEqual(
      expect.arrayContaining(["query after", "query limit", "header Accept", "header Last-Event-ID"]),
    );
    // Public, as every route without authentication says it: an empty list of requirements.
    expect(operation.security).toEqual([]);
  });

  it("answers HEAD with the JSON page's headers, never a stream", async () => {
    const response = await testApp().app.inject({
      method: "HEAD",
      url: EVENTS,
      headers: { accept: "text/event-stream" },
    });
    expect(response.statusCode).toBe(200);
    expect(response.headers["content-type"]).toBe(JSON_UTF8);
    expect(response.body).toBe("");
  });
});

describe("the CloudEvent renderer", () => {
  it("writes the data's timestamps in the given zone and the time in UTC", () => {
    const render = cloudEventRenderer("Asia/Seoul");
    const at = new Date("2026-11-22T10:15:30.123Z");
    const post = {
      id: 12,
      title: "t",
      content: "c",
      createdAt: at,
      updatedAt: at,
      author: { id: 7, email: "w@example.com" },
    };
    expect(
      JSON.parse(render({ type: "post.updated", number: 42, postId: 12, occurredAt: at, post })),
    ).toStrictEqual({
      specversion: "1.0",
      id: "42",
      source: "/api/v1/posts",
      type: "post.updated",
      subject: "12",
      time: "2026-11-22T10:15:30.123Z",
      datacontenttype: "application/json",
      data: {
        id: 12,
        title: "t",
        content: "c",
        createdAt: "2026-11-22T19:15:30.123",
        updatedAt: "2026-11-22T19:15:30.123",
        user: { id: 7, email: "w@example.com" },
      },
    });
    expect(render({ type: "post.deleted", number: 43, postId: 12, occurredAt: at })).not.toContain("\n");
  });
});
