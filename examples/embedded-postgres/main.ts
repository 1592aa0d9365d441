import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  createPgliteDatabase,
  migrateToLatest,
  PostgresPostRepository,
  PostgresUserRepository,
} from "@posts/adapters-postgres";
import { createPost, getPost, listPosts, patchPost, ROLE_USER, systemClock } from "@posts/domain";

// The posts domain on PostgreSQL embedded in this process (PGlite), in a directory of its own.
const dataDir = await mkdtemp(join(tmpdir(), "posts-embedded-"));
const database = await createPgliteDatabase({ dataDir });
const deps = {
  posts: new PostgresPostRepository(database.db),
  users: new PostgresUserRepository(database.db),
  clock: systemClock,
};
let failures = 0;
const expect = (holds: boolean, what: string) => {
  console.log(`${holds ? "ok  " : "FAIL"} ${what}`);
  if (!holds) failures++;
};

try {
  console.log(`migrated ${dataDir}: ${(await migrateToLatest(database.db)).applied.join(", ")}`);
  const user = await deps.users.create({
    email: "writer@example.com",
    passwordHash: "-",
    createdAt: new Date(),
  });
  if (!user.ok) throw new Error(user.error);
  const principal = { userId: user.value.id, email: user.value.email, authority: ROLE_USER };

  const created: number[] = [];
  for (const title of ["one", "two", "three", "four", "five"]) {
    const post = await createPost(deps, { principal, title, content: `the post called ${title}` });
    if (post.ok) created.push(post.value.id);
  }
  console.log(`created posts ${created.join(", ")}`);

  // Newest first, two at a time: each page's nextCursor continues after its last post.
  const seen: number[] = [];
  let cursor: string | undefined;
  do {
    const page = await listPosts(deps, { size: 2, ...(cursor === undefined ? {} : { cursor }) });
    if (!page.ok) throw new Error(JSON.stringify(page.error));
    seen.push(...page.value.posts.map((post) => post.id));
    console.log(`page [${page.value.posts.map((post) => post.title)}], next cursor ${page.value.nextCursor}`);
    cursor = page.value.nextCursor ?? undefined;
  } while (cursor !== undefined);
  expect(seen.join() === created.toReversed().join(), "the pages hold every post once, newest first");

  const postId = String(created[0]);
  const patched = await patchPost(deps, { principal, postId, title: "one, renamed" });
  const stored = await getPost(deps, postId);
  console.log(`patched: ${JSON.stringify(stored.ok && stored.value)}`);
  expect(stored.ok && stored.value.title === "one, renamed", "the patch changed the title");
  expect(stored.ok && stored.value.content === "the post called one", "and left the content alone");
  expect(patched.ok && patched.value.updatedAt > patched.value.createdAt, "updatedAt moved on");
  const empty = await patchPost(deps, { principal, postId });
  expect(!empty.ok && empty.error.kind === "empty-patch", `a patch of nothing: ${JSON.stringify(empty)}`);
} finally {
  await database.close();
  await rm(dataDir, { recursive: true, force: true });
}
process.exitCode = failures === 0 ? 0 : 1;
