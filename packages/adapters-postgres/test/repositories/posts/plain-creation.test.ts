import { sql } from "kysely";
import { expect, it } from "vitest";
import { describeOnEachEngine, useTestDatabase } from "../../use-test-database.js";
import { creations } from "./creations.js";

describeOnEachEngine("creations of posts in one statement on %s", (engine) => {
  const database = useTestDatabase(engine);
  const { setUp, writers, postsOf, eventsOf } = creations(database, engine);

  it("inserts the creations asked for in one turn of the event loop with one statement, each its own post", async () => {
    const { posts, asked, author } = await setUp();
    const created = await Promise.all([0, 1, 2, 3, 4, 5].map((i) => posts.create(asked(i))));
    const ids = created.map((post) => post?.id as number);

    expect(created.map((post) => post?.title)).toEqual([0, 1, 2, 3, 4, 5].map((i) => `post ${i}`));
    expect(created.map((post) => post?.content)).toEqual([0, 1, 2, 3, 4, 5].map((i) => asked(i).content));
    expect(created.map((post) => post?.createdAt)).toEqual([0, 1, 2, 3, 4, 5].map((i) => asked(i).createdAt));
    expect(created.map((post) => post?.updatedAt)).toEqual([0, 1, 2, 3, 4, 5].map((i) => asked(i).createdAt));
    for (const post of created) expect(post?.author).toEqual({ id: author.id, email: author.email });
    // Ids in the order asked, each post as stored, one transaction, one event each.
    expect([...ids].sort((a, b) => a - b)).toEqual(ids);
    expect(new Set(ids).size).toBe(6);
    for (const post of created) expect(await posts.findById(post?.id as number)).toEqual(post);
    expect(await writers(ids)).toBe(1);
    expect(await eventsOf(ids)).toBe(6);
  });

  it("inserts a lone creation, and each later turn's, with a statement of its own", async () => {
    const { posts, asked } = await setUp();
    const first = await posts.create(asked(0));
    const second = await posts.create(asked(1));
    expect([first?.title, second?.title]).toEqual(["post 0", "post 1"]);
    expect(await writers([first?.id as number, second?.id as number])).toBe(2);
  });

  it("inserts a long content with a statement of its own, beside the batch of the others", async () => {
    const { posts, asked } = await setUp();
    const long = "long ".repeat(4000);
    const created = await Promise.all([
      posts.create(asked(0)),
      posts.create(asked(1, { content: long })),
      posts.create(asked(2)),
    ]);
    expect(created[1]?.content).toBe(long);
    expect(await writers([created[0]?.id as number, created[2]?.id as number])).toBe(1);
    expect(await writers(created.map((post) => post?.id as number))).toBe(2);
  });

  it("answers nothing for a creation whose author is gone, and creates the others of its statement", async () => {
    const { posts, asked } = await setUp();
    const created = await Promise.all([
      posts.create(asked(0)),
      posts.create(asked(1, { authorId: 987_654_321 })),
      posts.create(asked(2)),
    ]);
    expect(created.map((post) => post?.title)).toEqual(["post 0", undefined, "post 2"]);
    expect(await writers([created[0]?.id as number, created[2]?.id as number])).toBe(1);
  });

  it("tries each creation alone when their statement fails for one of them, so that only that one fails", async () => {
    const { posts, asked } = await setUp();
    // Longer than the column allows: what the domain never sends, here a stand-in for any row
    // PostgreSQL refuses.
    const answers = await Promise.allSettled([
      posts.create(asked(0)),
      posts.create(asked(1, { title: "x".repeat(300) })),
      posts.create(asked(2)),
    ]);
    expect(answers.map((answer) => answer.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    const ids = answers.flatMap((answer) =>
      answer.status === "fulfilled" ? [answer.value?.id as number] : [],
    );
    expect(await writers(ids)).toBe(2);
    expect(await eventsOf(ids)).toBe(2);
  });

  it("fails every creation of a statement that failed because the database is unavailable, without trying each alone", async () => {
    const { posts, asked, author } = await setUp();
    // A row that makes the statement fail as a server shutting down does (57P01).
    await sql`
      CREATE FUNCTION posts_refuse_unavailable() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.title = 'unavailable' THEN
          RAISE EXCEPTION 'shutting down' USING ERRCODE = 'admin_shutdown';
        END IF;
        RETURN NEW;
      END $$`.execute(database().db);
    await sql`
      CREATE TRIGGER posts_refuse_unavailable BEFORE INSERT ON posts
      FOR EACH ROW EXECUTE FUNCTION posts_refuse_unavailable()`.execute(database().db);
    try {
      const answers = await Promise.allSettled([
        posts.create(asked(0, { title: "unaffected one" })),
        posts.create(asked(1, { title: "unavailable" })),
        posts.create(asked(2, { title: "unaffected two" })),
      ]);
      expect(answers.map((answer) => answer.status)).toEqual(["rejected", "rejected", "rejected"]);
      expect(await postsOf(author.id)).toBe(0);
    } finally {
      await sql`DROP TRIGGER posts_refuse_unavailable ON posts`.execute(database().db);
      await sql`DROP FUNCTION posts_refuse_unavailable()`.execute(database().db);
    }
  });
});
