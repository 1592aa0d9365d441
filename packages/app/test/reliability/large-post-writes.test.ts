import { createHash } from "node:crypto";
import { postgresForTests } from "@posts/adapters-postgres/testing";
import { describeNeeding } from "@posts/domain/testing/vitest";
import { afterAll, beforeAll, expect, it } from "vitest";
import { type ListeningService, startService } from "../support/service-process.js";
import { countPosts, insertUserWithToken } from "./admin-sql.js";
import { RELIABILITY_JWT_SECRET } from "./in-process-service.js";
import {
  exchange,
  expectAllAnswered,
  expectToComeBack,
  RSS_BOUND_MIB,
  tally,
  watchMemory,
} from "./large-answers.js";
import { useSuiteDatabase } from "./postgres-suite.js";

// Posts and bodies large enough that the writes of the old design (a PATCH answering the whole
// post read back and written as one buffer, bodies read whole with no bound) held GiBs here.
const CONTENT_BYTES = 10 * 1024 * 1024;
const CONCURRENT_PATCHES = 50;
const CONCURRENT_POSTS = 50;

describeNeeding(
  await postgresForTests(),
  "large writes by many clients at once, on a PostgreSQL server, as a real process",
  () => {
    const database = useSuiteDatabase();
    let service: ListeningService | undefined;
    let token = "";
    const ids: number[] = [];
    let content = "";

    beforeAll(async () => {
      const writer = await insertUserWithToken(database());
      token = writer.token;
      // Punctuation, which holds no trigram: the trigram index of the content costs the server
      // little at each write, so that the test's time goes to the service, not to the index.
      const unit = ".,;:!?-+ ";
      content = unit.repeat(Math.ceil(CONTENT_BYTES / unit.length)).slice(0, CONTENT_BYTES);
      // Made by the server in one statement, rather than sent: 500 MB need not cross the socket.
      const now = new Date().toISOString();
      const made = await database()
        .db.insertInto("posts")
        .values(
          Array.from({ length: CONCURRENT_PATCHES }, (_, i) => ({
            user_id: writer.id,
            title: `large ${i}`,
            content: (eb) =>
              eb.fn<string>("left", [
                eb.fn<string>("repeat", [eb.val(unit), eb.val(Math.ceil(CONTENT_BYTES / unit.length))]),
                eb.val(CONTENT_BYTES),
              ]),
            created_at: now,
            updated_at: now,
          })),
        )
        .returning(["id", "title"])
        .execute();
      for (const row of made) ids[Number(row.title.slice("large ".length))] = Number(row.id);
      service = await startService({
        JWT_SECRET: RELIABILITY_JWT_SECRET,
        DATABASE_URL: database().connectionString,
        // Writes of 10 MB queue for the server's two cores here: each waits its turn rather than
        // fail, so that the answers are the budgets' doing.
        DB_STATEMENT_TIMEOUT_MS: "120000",
        DB_CONNECT_TIMEOUT_MS: "120000",
      });
    }, 300_000);
    afterAll(async () => {
      await service?.stop();
    });

    it(`keeps RSS under ${RSS_BOUND_MIB} MiB with ${CONCURRENT_PATCHES} PATCHes of the title of posts of ` +
      `${CONTENT_BYTES / 1024 / 1024} MiB and ${CONCURRENT_POSTS} POSTs of such bodies at once; every answer 200, 201 or 503, nothing acknowledged lost`, async () => {
      const running = service as ListeningService;
      const auth = { "x-auth-token": token };
      const postsBefore = await countPosts(database());
      // One buffer of the content's JSON text, shared by every POST's body.
      const contentJson = Buffer.from(JSON.stringify(content));

      const peakOf = watchMemory(running);
      const [patches, posts] = await Promise.all([
        Promise.all(
          ids.map((id, i) =>
            exchange(`${running.url}/api/v1/posts/${id}`, "PATCH", auth, [
              Buffer.from(JSON.stringify({ title: `patched ${i}` })),
            ]),
          ),
        ),
        Promise.all(
          Array.from({ length: CONCURRENT_POSTS }, (_, i) =>
            exchange(`${running.url}/api/v1/posts`, "POST", auth, [
              Buffer.from(`{"title":"created ${i}","content":`),
              contentJson,
              Buffer.from("}"),
            ]),
          ),
        ),
      ]);
      const peak = peakOf();
      const summary = tally([
        ...patches.map((a) => `PATCH ${a.status}`),
        ...posts.map((a) => `POST ${a.status}`),
      ]);
      console.info(`large post writes: peak RSS ${Math.round(peak)} MiB, answers ${JSON.stringify(summary)}`);

      expectAllAnswered(running, [...patches, ...posts]);
      // Each PATCH answered 200 is the post as it changed, byte for byte what a GET of it answers
      // now (nothing changed it since), with its ETag; one answered 503 changed nothing.
      for (const [i, answer] of patches.entries()) {
        const id = ids[i] as number;
        const stored = await database()
          .db.selectFrom("posts")
          .select((eb) => ["title", eb.fn<number>("octet_length", ["content"]).as("bytes")])
          .where("id", "=", id)
          .executeTakeFirst();
        if (answer.status === 503) {
          expectToComeBack(answer);
          expect(stored?.title).toBe(`large ${i}`);
          continue;
        }
        expect(answer.status, answer.text).toBe(200);
        expect(stored).toEqual({ title: `patched ${i}`, bytes: CONTENT_BYTES });
        const read = await exchange(`${running.url}/api/v1/posts/${id}`, "GET");
        expect(read.status).toBe(200);
        expect(answer.bytes).toBe(read.bytes);
        expect(answer.digest).toBe(read.digest);
        expect(answer.headers.etag).toBe(read.headers.etag);
      }
      // Each POST answered 201 stored its whole content; the ones answered 503 stored nothing.
      const created: number[] = [];
      for (const answer of posts) {
        if (answer.status === 503) {
          expectToComeBack(answer);
          continue;
        }
        expect(answer.status, answer.text).toBe(201);
        created.push(Number(String(answer.headers.location).split("/").pop()));
      }
      const expectedMd5 = createHash("md5").update(content).digest("hex");
      const stored =
        created.length === 0
          ? []
          : await database()
              .db.selectFrom("posts")
              .select((eb) => [
                eb.fn<number>("octet_length", ["content"]).as("bytes"),
                eb.fn<string>("md5", ["content"]).as("md5"),
              ])
              .where("id", "in", created)
              .execute();
      expect(stored).toHaveLength(created.length);
      for (const row of stored)
        expect({ bytes: row.bytes, md5: row.md5 }).toEqual({ bytes: CONTENT_BYTES, md5: expectedMd5 });
      expect(await countPosts(database())).toBe(postsBefore + created.length);

      // Every PATCH waits for room after its change rather than answer 503; of the POSTs, the
      // budget serves one at a time and the others are told to come back once the wait runs out:
      // on two cores shared with other runs, each POST's write of 10 MB takes seconds, so as few
      // as one may be served within the wait.
      expect(patches.filter((a) => a.status === 200).length).toBe(CONCURRENT_PATCHES);
      expect(created.length).toBeGreaterThanOrEqual(1);
      expect(peak).toBeLessThan(RSS_BOUND_MIB);
    }, 300_000);
  },
);
