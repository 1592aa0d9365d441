import type { PostUpdate } from "../../ports/post-repository.js";
import type { Post } from "../../post.js";
import type { User } from "../../user.js";
import type { RepositoryFixture } from "./repository-fixture.js";

/**
 * What the parts of the post repository contract share: the open fixture and helpers bound to
 * it. Internal to the contract suites.
 */
export interface PostContractContext {
  readonly fixture: () => RepositoryFixture;
  /** Registers one case of the suite (vitest's `it`) with the suite's time limit. */
  readonly spec: (title: string, body: () => Promise<void>) => void;
  /** Stores a user with a fresh email. */
  readonly newAuthor: () => Promise<User>;
  /** Stores a post by `author`. */
  readonly newPost: (
    author: { readonly id: number },
    overrides?: { title?: string; content?: string; createdAt?: Date },
  ) => Promise<Post>;
  /** The stored post with this id, as `findById` answers it. */
  readonly stored: (id: number) => Promise<Post | undefined>;
  /**
   * The port's update of `post` asked by the user who wrote it, so that a case names only what
   * it varies; the cases about someone else's or a missing post call `update` themselves.
   */
  readonly updateByAuthor: (
    post: Post,
    update: Omit<PostUpdate, "id" | "authorId">,
  ) => ReturnType<RepositoryFixture["posts"]["update"]>;
}
