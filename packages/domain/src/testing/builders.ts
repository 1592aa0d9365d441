import type { PostRepository } from "../ports/post-repository.js";
import type { UserRepository } from "../ports/user-repository.js";
import type { Post } from "../post.js";
import { type Principal, ROLE_USER } from "../principal.js";
import type { User } from "../user.js";

let sequence = 0;

// Two test processes may share one database and start in the same millisecond.
const run = `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 8)}`;

/**
 * A valid, normalized email that no other call answers, in this process or another one
 * writing to the same database, so tests need no empty store.
 */
export function anEmail(prefix = "writer"): string {
  sequence++;
  return `${prefix}${sequence}.${run}@example.com`;
}

/** Stores a user with a unique email (unless given) and answers it. Fails the test on conflict. */
export async function aUser(
  users: UserRepository,
  overrides: { email?: string; passwordHash?: string; createdAt?: Date } = {},
): Promise<User> {
  const created = await users.create({
    email: overrides.email ?? anEmail(),
    passwordHash: overrides.passwordHash ?? "hash",
    createdAt: overrides.createdAt ?? new Date("2026-11-22T10:00:00.000Z"),
  });
  if (!created.ok) throw new Error(`test user could not be created: ${created.error}`);
  return created.value;
}

/** Stores a post by `author` and answers it. Fails the test when the author is gone. */
export async function aPost(
  posts: PostRepository,
  author: { readonly id: number },
  overrides: { title?: string; content?: string; createdAt?: Date } = {},
): Promise<Post> {
  const post = await posts.create({
    authorId: author.id,
    title: overrides.title ?? "안녕하세요",
    content: overrides.content ?? "본문",
    createdAt: overrides.createdAt ?? new Date("2026-11-22T10:15:30.123Z"),
  });
  if (post === undefined) throw new Error("test post could not be created: author is gone");
  return post;
}

/** The principal a valid token for `user` carries. */
export function principalOf(
  user: { readonly id: number; readonly email: string },
  authority = ROLE_USER,
): Principal {
  return { userId: user.id, email: user.email, authority };
}
