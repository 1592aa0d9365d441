/** The author of a post as the post shows it: never the password hash or registration time. */
export interface Author {
  readonly id: number;
  readonly email: string;
}

/** A stored post. Timestamps are instants with millisecond precision. */
export interface Post {
  readonly id: number;
  readonly title: string;
  readonly content: string;
  readonly createdAt: Date;
  readonly updatedAt: Date;
  readonly author: Author;
}

/**
 * A post read without its content, because the content is too large to hold beside other posts
 * read at once: everything of the post but the content, and the content's size. Whoever answers
 * with it reads the whole post (`PostRepository.findWhole`) when, and only when, it has room for
 * it. `content` is absent, which tells it from a {@link Post}.
 */
export interface PostOutline extends Omit<Post, "content"> {
  readonly content?: undefined;
  /** The content's size in UTF-8 bytes. */
  readonly contentBytes: number;
}

/** A post as a read answers it: whole, or, when its content is large, as an outline. */
export type ReadPost = Post | PostOutline;

/** Whether `post` carries its content (is no {@link PostOutline}). */
export function isWhole(post: ReadPost): post is Post {
  return typeof post.content === "string";
}

/** What a repository needs to store a new post; the id is the repository's to choose. */
export interface NewPost {
  readonly authorId: number;
  readonly title: string;
  readonly content: string;
  /** Used for both createdAt and updatedAt. */
  readonly createdAt: Date;
}

/** The fields a modification may change. Absent fields keep their stored value. */
export interface PostChanges {
  readonly title?: string;
  readonly content?: string;
}

/**
 * The updatedAt a modification must store: `now`, unless the clock has not moved past the
 * previous updatedAt, in which case one millisecond after it. This keeps updatedAt strictly
 * increasing (and so strictly after createdAt) even for writes in the same millisecond or
 * under a clock that stepped back.
 */
export function nextUpdatedAt(previous: Date, now: Date): Date {
  return now.getTime() > previous.getTime() ? now : new Date(previous.getTime() + 1);
}
