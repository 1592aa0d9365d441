import { PostgresPostRepository, type RunStatement } from "@posts/adapters-postgres";
import { CompiledQuery } from "kysely";
import { expect, it } from "vitest";
import { describeOnEachEngine, useTestDatabase } from "../../use-test-database.js";

const CREATED_AT = new Date("2026-11-24T10:15:30.123Z");

describeOnEachEngine("lookups of one post by id on %s", (engine) => {
  const database = useTestDatabase(engine);
  let authors = 0;

  async function setUp() {
    const texts: string[] = [];
    const run: RunStatement = async (text, parameters) => {
      texts.push(text);
      return (await database().db.executeQuery(CompiledQuery.raw(text, [...parameters]))).rows;
    };
    const posts = new PostgresPostRepository(database().db, { readStatements: run });
    const author = await database().users.create({
      email: `lookups-${engine}-${++authors}@example.com`,
      passwordHash: "hash",
      createdAt: CREATED_AT,
    });
    if (!author.ok) throw new Error(author.error);
    const ids: number[] = [];
    for (let i = 0; i < 5; i++) {
      const post = await posts.create({
        authorId: author.value.id,
        title: `post ${i}`,
        content: `content ${i}`,
        createdAt: CREATED_AT,
      });
      ids.push(post?.id as number);
    }
    return { posts, ids, texts, email: author.value.email };
  }

  it("sends a lookup asked while none waits at once, and gathers those asked meanwhile in one turn into one statement", async () => {
    const { posts, ids, texts, email } = await setUp();
    texts.length = 0;
    const missing = Math.max(...ids) + 1000;
    const asked = [ids[3], ids[0], missing, ids[3], ids[4]] as number[];
    const found = await Promise.all(asked.map((id) => posts.findById(id)));

    expect(texts).toHaveLength(2);
    expect(texts[0]).not.toMatch(/unnest\(/i);
    expect(texts[1]).toMatch(/IN \(SELECT unnest\(/i);
    expect(found.map((post) => post?.id)).toEqual([ids[3], ids[0], undefined, ids[3], ids[4]]);
    expect(found.map((post) => post?.title)).toEqual(["post 3", "post 0", undefined, "post 3", "post 4"]);
    expect(found[0]?.author).toEqual({ id: expect.any(Number), email });
  });

  it("splits a turn's gathered lookups into statements of at most 16, each lookup answered by its own", async () => {
    const { posts, ids, texts } = await setUp();
    texts.length = 0;
    // The first alone, then 19 gathered: 16 and 3.
    const asked = Array.from({ length: 20 }, (_, i) => ids[i % ids.length] as number);
    const found = await Promise.all(asked.map((id) => posts.findById(id)));
    expect(texts).toHaveLength(3);
    expect(texts.filter((text) => /unnest\(/i.test(text))).toHaveLength(2);
    expect(found.map((post) => post?.id)).toEqual(asked);
  });

  it("sends a lone lookup as the plain statement by id, and each later turn its own statement", async () => {
    const { posts, ids, texts } = await setUp();
    texts.length = 0;
    expect((await posts.findById(ids[1] as number))?.title).toBe("post 1");
    expect((await posts.findById(ids[2] as number))?.title).toBe("post 2");
    expect(await posts.findById(Math.max(...ids) + 1000)).toBeUndefined();
    // A small post in one statement; finding none takes the outline's statement too, which tells
    // a larger post from none.
    expect(texts).toHaveLength(4);
    for (const text of texts) expect(text).not.toMatch(/unnest\(/i);
    expect(texts.map((text) => /CASE WHEN/i.test(text))).toEqual([false, false, false, true]);
  });

  it("sees a change committed before the lookup was asked for, even within a batch", async () => {
    const { posts, ids } = await setUp();
    const id = ids[0] as number;
    const before = await posts.findById(id);
    const updated = await posts.update({
      id,
      authorId: before?.author.id as number,
      changes: { title: "changed" },
      now: new Date(CREATED_AT.getTime() + 1000),
    });
    expect(updated.ok).toBe(true);
    // The first sent alone, the other two gathered.
    const [first, again, other] = await Promise.all([
      posts.findById(ids[2] as number),
      posts.findById(id),
      posts.findById(ids[1] as number),
    ]);
    expect(first?.title).toBe("post 2");
    expect(again?.title).toBe("changed");
    expect(other?.title).toBe("post 1");
  });
});
