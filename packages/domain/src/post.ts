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
