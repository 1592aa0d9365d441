import { describe, expect, it } from "vitest";
import { anEmail, aPost, aUser } from "../builders.js";
import type { OpenRepositories, RepositoryContractOptions } from "./repository-fixture.js";
import { useRepositoryFixture } from "./use-repository-fixture.js";

const REGISTERED_AT = new Date("2026-11-22T10:15:30.123Z");
// A real argon2id PHC string: `$`, `=` and `,` must survive storage untouched.
const PHC_HASH =
  "$argon2id$v=19$m=65536,t=3,p=4$c29tZXNhbHRzb21lc2FsdA$8Vb0Yj3xH0N1nQ2mB3Pq0iY0p5b7i3o9Jq2d4FhQ1xU";

/**
 * Registers the behavioural tests every `UserRepository` must pass, under `describe(name)`:
 * the port's JSDoc turned into checks. Run it from a test file once per implementation,
 * with the same `open` as `postRepositoryContract` (see {@link OpenRepositories} for
 * what the tests assume of the store):
 *
 * ```ts
 * userRepositoryContract("PostgreSQL", async () => {
 *   const db = await openTestDatabase(process.env.DATABASE_URL);
 *   return { posts: db.posts, users: db.users, close: () => db.close() };
 * });
 * ```
 *
 * Checks: create and read back by id and by email, to the millisecond; unique emails, also
 * across case variants (emails arrive normalized, but the store must not rely on it); an
 * email freed by deleting its user; delete answering whether the user existed; deleting a
 * user removes every post they wrote and nobody else's.
 */
export function userRepositoryContract(
  name: string,
  open: OpenRepositories,
  options: RepositoryContractOptions = {},
): void {
  // Every contract suite opens alike: an entry point of its own (public, with its own JSDoc), and
  // the store opened once for the suite by useRepositoryFixture, which is what they share.
  describe(name, () => {
    const fixture = useRepositoryFixture(open, options);
    const spec = (title: string, body: () => Promise<void>) => it(title, body, options.testTimeoutMs);

    describe("create, findById and findByEmail", () => {
      spec("create answers the user with a new id and every field as given", async () => {
        const email = anEmail();
        const created = await fixture().users.create({
          email,
          passwordHash: PHC_HASH,
          createdAt: REGISTERED_AT,
        });
        expect(created).toStrictEqual({
          ok: true,
          value: { id: expect.any(Number), email, passwordHash: PHC_HASH, createdAt: REGISTERED_AT },
        });
        const id = created.ok ? created.value.id : 0;
        expect(Number.isSafeInteger(id) && id > 0).toBe(true);
      });

      spec("findById and findByEmail answer exactly what create answered", async () => {
        const user = await aUser(fixture().users, { passwordHash: PHC_HASH });
        expect(await fixture().users.findById(user.id)).toStrictEqual(user);
        expect(await fixture().users.findByEmail(user.email)).toStrictEqual(user);
      });

      spec("keeps createdAt to the millisecond", async () => {
        for (const createdAt of [
          new Date("2026-11-22T10:15:30.001Z"),
          new Date("2026-11-22T10:15:30.999Z"),
        ]) {
          const user = await aUser(fixture().users, { createdAt });
          expect((await fixture().users.findById(user.id))?.createdAt.getTime()).toBe(createdAt.getTime());
        }
      });

      spec("keeps a non-ASCII address exactly", async () => {
        const email = anEmail("사용자");
        const user = await aUser(fixture().users, { email });
        expect(user.email).toBe(email);
        expect((await fixture().users.findByEmail(email))?.id).toBe(user.id);
      });

      spec("gives different users different ids", async () => {
        const first = await aUser(fixture().users);
        const second = await aUser(fixture().users);
        expect(second.id).not.toBe(first.id);
      });

      spec("answers undefined for an email or an id nobody has", async () => {
        expect(await fixture().users.findByEmail(anEmail("nobody"))).toBeUndefined();
        expect(await fixture().users.findById(Number.MAX_SAFE_INTEGER)).toBeUndefined();
      });
    });

    describe("unique emails", () => {
      spec("fails with email-taken for an email registered already, and keeps the first user", async () => {
        const first = await aUser(fixture().users);
        const again = await fixture().users.create({
          email: first.email,
          passwordHash: "other",
          createdAt: REGISTERED_AT,
        });
        expect(again).toStrictEqual({ ok: false, error: "email-taken" });
        expect(await fixture().users.findByEmail(first.email)).toStrictEqual(first);
      });

      spec("treats an upper-case variant of a registered email as taken", async () => {
        const first = await aUser(fixture().users);
        const shouted = await fixture().users.create({
          email: first.email.toUpperCase(),
          passwordHash: "other",
          createdAt: REGISTERED_AT,
        });
        expect(shouted).toStrictEqual({ ok: false, error: "email-taken" });
        expect(await fixture().users.findByEmail(first.email)).toStrictEqual(first);
      });

      spec("treats the lower-case form of a registered upper-case email as taken", async () => {
        const lower = anEmail("upper");
        await aUser(fixture().users, { email: lower.toUpperCase() });
        const again = await fixture().users.create({
          email: lower,
          passwordHash: "other",
          createdAt: REGISTERED_AT,
        });
        expect(again).toStrictEqual({ ok: false, error: "email-taken" });
      });

      spec("frees the email once its user is deleted", async () => {
        const first = await aUser(fixture().users);
        await fixture().users.delete(first.id);
        const second = await fixture().users.create({
          email: first.email,
          passwordHash: "new",
          createdAt: REGISTERED_AT,
        });
        expect(second.ok).toBe(true);
        expect((await fixture().users.findByEmail(first.email))?.id).toBe(
          second.ok ? second.value.id : undefined,
        );
      });
    });

    describe("delete", () => {
      spec("answers true and removes the user, then answers false", async () => {
        const user = await aUser(fixture().users);
        expect(await fixture().users.delete(user.id)).toBe(true);
        expect(await fixture().users.findById(user.id)).toBeUndefined();
        expect(await fixture().users.findByEmail(user.email)).toBeUndefined();
        expect(await fixture().users.delete(user.id)).toBe(false);
      });

      spec("answers false for an id nobody has", async () => {
        expect(await fixture().users.delete(Number.MAX_SAFE_INTEGER)).toBe(false);
      });

      spec("removes every post the user wrote and nobody else's", async () => {
        const leaving = await aUser(fixture().users);
        const staying = await aUser(fixture().users);
        const gone1 = await aPost(fixture().posts, leaving);
        const kept = await aPost(fixture().posts, staying);
        const gone2 = await aPost(fixture().posts, leaving);

        expect(await fixture().users.delete(leaving.id)).toBe(true);

        expect(await fixture().posts.findById(gone1.id)).toBeUndefined();
        expect(await fixture().posts.findById(gone2.id)).toBeUndefined();
        expect(await fixture().posts.listPage({ limit: 10, authorId: leaving.id })).toEqual([]);
        expect(await fixture().posts.findById(kept.id)).toStrictEqual(kept);
        expect(await fixture().users.findById(staying.id)).toStrictEqual(staying);
        // Unfiltered too, as far back as this test's posts go.
        const newest = await fixture().posts.listPage({ limit: 3 });
        expect(newest.map((post) => post.id).filter((id) => id >= gone1.id)).toEqual([kept.id]);
      });

      spec("leaves other users untouched", async () => {
        const leaving = await aUser(fixture().users);
        const staying = await aUser(fixture().users);
        await fixture().users.delete(leaving.id);
        expect(await fixture().users.findById(staying.id)).toStrictEqual(staying);
        expect(await fixture().users.findByEmail(staying.email)).toStrictEqual(staying);
      });
    });
  });
}
