import type { PostRepository, ReadPost } from "@posts/domain";

/**
 * A content longer than this many characters comes as an outline from
 * {@link outliningRepository}, as PostgreSQL's does past its own threshold.
 */
export const OUTLINE_ABOVE = 1000;

/** `post` as an outline when its content is over {@link OUTLINE_ABOVE}, else as it is. */
function outline(post: ReadPost): ReadPost {
  if (post.content === undefined || post.content.length <= OUTLINE_ABOVE) return post;
  const { content, ...rest } = post;
  return { ...rest, contentBytes: Buffer.byteLength(content) };
}

/**
 * `posts` answering large posts as outlines from `findById`, `listPage`, `searchPage` and
 * `update`, their whole reads waiting for `gate` when given.
 */
export function outliningRepository(posts: PostRepository, gate?: { opened: Promise<void> }): PostRepository {
  return {
    ...posts,
    findById: async (id) => {
      const post = await posts.findById(id);
      return post === undefined ? undefined : outline(post);
    },
    listPage: async (query) => (await posts.listPage(query)).map(outline),
    searchPage: async (query) => {
      const read = await posts.searchPage(query);
      return { ...read, posts: read.posts.map(outline) };
    },
    findWhole: async (id) => {
      await gate?.opened;
      return posts.findWhole(id);
    },
    update: async (update) => {
      const updated = await posts.update(update);
      return updated.ok ? { ok: true, value: outline(updated.value) } : updated;
    },
  };
}
