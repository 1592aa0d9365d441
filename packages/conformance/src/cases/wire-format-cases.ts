import type { ConformanceCase } from "../runner/conformance-case.js";
import { expectEqual, expectStatus, expectThat, jsonOf } from "../support/expectations.js";
import { LOGIN, POSTS, USER } from "../support/fixture.js";
import { wallClockNow, wallClockOf } from "../support/wall-clock.js";
import { expectNoSecrets, expectPageReply, expectPostReply } from "../support/wire-shapes.js";

const section = "docs/posts.md#a-post-on-the-wire";
// Far below the smallest gap between two zones' offsets (15 minutes), far above any sane clock drift.
const CLOCK_TOLERANCE_MS = 5 * 60_000;

/** docs/posts.md#a-post-on-the-wire: the exact shape of a post wherever one travels, timestamps, and no secrets. */
export const wireFormatCases: readonly ConformanceCase[] = [
  // Written out whole, case by case, though alike in shape: see ConformanceCase.
  {
    section,
    name: "GET by id answers exactly id, title, content, createdAt, updatedAt and user {id, email}, ids as integers",
    async run({ api, fixture }) {
      const writer = await fixture.shared("writer");
      const id = await fixture.createPost(writer, { title: "형식 제목", content: "형식 본문" });
      const post = expectPostReply(await api.get(`${POSTS}/${id}`));
      expectEqual(post.id, id, "post.id");
      expectEqual(post.title, "형식 제목", "post.title");
      expectEqual(post.content, "형식 본문", "post.content");
      expectEqual(post.user, { id: writer.id, email: writer.email }, "post.user");
    },
  },
  {
    section,
    name: "list items and the PATCH answer have the same exact shape",
    async run({ api, fixture }) {
      const writer = await fixture.shared("writer");
      const id = await fixture.createPost(writer);
      const page = expectPageReply(await api.get(`${POSTS}?userId=${writer.id}&size=100`));
      const listed = page.content.find((post) => post.id === id);
      expectThat(
        listed !== undefined,
        `the page of user ${writer.id}`,
        `post ${id}`,
        page.content.map((p) => p.id),
      );
      const patched = expectPostReply(
        await api.patch(`${POSTS}/${id}`, { token: writer.token, json: { title: "바뀐 제목" } }),
      );
      expectEqual(patched.user, { id: writer.id, email: writer.email }, "PATCH answer: user");
    },
  },
  {
    section,
    name: "timestamps are yyyy-MM-ddTHH:mm:ss.SSS in the service's time zone (--time-zone)",
    async run({ api, fixture, options }) {
      const writer = await fixture.shared("writer");
      const id = await fixture.createPost(writer);
      const post = expectPostReply(await api.get(`${POSTS}/${id}`));
      const skew = wallClockOf(post.createdAt) - wallClockNow(options.timeZone);
      expectThat(
        Math.abs(skew) < CLOCK_TOLERANCE_MS,
        `createdAt ${post.createdAt} against the clock of ${options.timeZone}`,
        "within 5 minutes of now in that zone",
        `${Math.round(skew / 60_000)} minutes away`,
      );
    },
  },
  {
    section,
    name: "every PATCH makes updatedAt strictly later than before and than createdAt, even back to back; createdAt never changes",
    async run({ api, fixture }) {
      const writer = await fixture.shared("writer");
      const id = await fixture.createPost(writer);
      const created = expectPostReply(await api.get(`${POSTS}/${id}`));
      let previous = created.updatedAt;
      for (let round = 1; round <= 5; round += 1) {
        const patched = expectPostReply(
          await api.patch(`${POSTS}/${id}`, { token: writer.token, json: { content: `round ${round}` } }),
        );
        expectEqual(patched.createdAt, created.createdAt, `PATCH ${round}: createdAt`);
        expectThat(
          patched.updatedAt > previous,
          `PATCH ${round}: updatedAt`,
          `later than ${previous}`,
          patched.updatedAt,
        );
        expectThat(
          patched.updatedAt > created.createdAt,
          `PATCH ${round}: updatedAt`,
          `later than createdAt ${created.createdAt}`,
          patched.updatedAt,
        );
        previous = patched.updatedAt;
      }
      // Two at once land in the same millisecond more often than not; each still moves updatedAt on.
      const racers = await Promise.all(
        ["a", "b"].map((racer) =>
          api.patch(`${POSTS}/${id}`, { token: writer.token, json: { title: racer } }),
        ),
      );
      const stamps = racers.map((reply) => expectPostReply(reply).updatedAt).sort();
      expectThat(
        (stamps[0] as string) > previous && stamps[0] !== stamps[1],
        "updatedAt of two concurrent PATCHes",
        `two different values, both later than ${previous}`,
        stamps,
      );
      const read = expectPostReply(await api.get(`${POSTS}/${id}`));
      expectEqual(read.updatedAt, stamps[1], "GET after the PATCHes: updatedAt (the later one)");
      expectEqual(read.createdAt, created.createdAt, "GET after the PATCHes: createdAt");
    },
  },
  {
    section,
    name: "no answer carries a password or its hash (register, login, GET user, posts, pages)",
    async run({ api, fixture }) {
      const email = fixture.email("secrets");
      const password = fixture.password();
      const registered = await api.post(USER, { json: { email, password } });
      expectStatus(registered, 201);
      const user = await fixture.adopt(registered, password);
      const id = await fixture.createPost(user);
      const replies = [
        registered,
        await api.post(LOGIN, { json: { email, password } }),
        await api.get(USER, { token: user.token }),
        await api.get(`${POSTS}/${id}`),
        await api.get(`${POSTS}?userId=${user.id}`),
      ];
      for (const reply of replies) {
        expectStatus(reply, reply === registered ? 201 : 200);
        expectNoSecrets(jsonOf(reply), `${reply.request}: body`);
        expectThat(
          !reply.text.includes(password) && !/\$argon2|\$scrypt|\$2[aby]\$/.test(reply.text),
          `${reply.request}: body`,
          "neither the password nor a hash",
          reply.text,
        );
      }
    },
  },
];
