/**
 * A program that uses the service through @posts/client: signs up, writes posts, edits one with
 * the version it read, is refused a stale edit as a typed value, and walks the pages.
 * POSTS_URL says where the service is (default http://127.0.0.1:8080).
 */
import { createClient, type Result } from "@posts/client";

const anonymous = createClient({ baseUrl: process.env.POSTS_URL ?? "http://127.0.0.1:8080" });

/** The value, or the end of the program with the failure's kind: every failure is a value to look at. */
function orExit<T>(result: Result<T>, what: string): T {
  if (result.ok) return result.value;
  console.error(`FAIL ${what}: ${result.error.kind} (${result.error.message})`);
  process.exit(1);
}

const credentials = { email: `reader-${Date.now()}@example.com`, password: "correct horse battery" };
const me = orExit(await anonymous.users.register(credentials), "register");
const { token } = orExit(await anonymous.users.login(credentials), "login");
const client = anonymous.withToken(token);
console.log(`ok   registered and logged in as ${me.email}`);

// Each create carries an Idempotency-Key: retried after a lost answer, it still makes one post.
for (const title of ["first", "second", "third"]) {
  const created = orExit(await client.posts.create({ title, content: `the ${title} post` }), "create");
  console.log(`ok   created post ${created.id} (${title})`);
}

// An edit is based on the version read: it is sent with If-Match.
const [newest] = orExit(await client.posts.page({ userId: me.id, size: 1 }), "page").content;
const read = orExit(await client.posts.get(newest?.id ?? 0), "get");
const edited = orExit(await client.posts.update(read, { title: "third, edited" }), "update");
console.log(`ok   edited post ${edited.value.id}: "${edited.value.title}"`);

// The version read before that edit is stale now: a typed refusal, nothing thrown, nothing changed.
const stale = await client.posts.update(read, { title: "lost update" });
if (stale.ok || stale.error.kind !== "precondition-failed") {
  console.error(`FAIL a stale update must be refused: ${JSON.stringify(stale)}`);
  process.exit(1);
}
console.log(`ok   a stale edit was refused: ${stale.error.kind}`);

// Pages of two, followed to the end by the iterator.
const titles: string[] = [];
const listing = client.posts.list({ userId: me.id, size: 2 });
for await (const post of listing) titles.push(post.title);
if (listing.error !== undefined) orExit({ ok: false, error: listing.error }, "list");
console.log(`ok   listed ${titles.length} posts, newest first: ${titles.join(", ")}`);

orExit(await client.users.deleteMe(), "delete account");
console.log("ok   deleted the account and its posts");
