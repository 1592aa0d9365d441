import type { Post, PostPage } from "@posts/domain";
import type { TimestampFormatter } from "../http/timestamp-formatter.js";
import type { PostCacheAccess } from "../http-app-options.js";
import type { PostJson } from "../schemas/post-schemas.js";

/**
 * The JSON text of the posts resource's answers: the one serializer every route that answers
 * with a post or a page uses, so that the same post reads byte for byte the same in GET by id,
 * PATCH and every list and search page.
 */
export interface PostSerializer {
  /** A post as `PostSchema` describes it (CONTRACT §1): `toPostJson`, as JSON. */
  post(post: Post): string;
  /** A page as `PostPageSchema` describes it: its posts as {@link PostSerializer.post} writes them, its size and nextCursor. */
  page(page: PostPage): string;
}

/**
 * Builds the serializer for timestamps written by `format`. A post's JSON is
 * `JSON.stringify(toPostJson(post, format))`, whose properties come in `PostSchema`'s order,
 * as Fastify's schema serializer wrote them (a test holds the two equal); a page is assembled
 * around its posts' JSON. Given a repository's `cache`, the JSON of each post it holds is kept
 * beside the post for as long as that object lives, and written again from there: a page of
 * cached posts becomes a concatenation.
 */
export function postSerializer(format: TimestampFormatter, cache?: PostCacheAccess): PostSerializer {
  const serialize = (post: Post) => JSON.stringify(toPostJson(post, format));
  if (cache === undefined) return { post: serialize, page: (page) => pageJson(page, serialize) };

  // Weak, and only for posts the cache holds: the memo never keeps a post alive, so it holds
  // no more than the cache (whose byte bound counts this JSON) plus the requests in flight, and a
  // post read once (not cached) costs no entry that would only wait to be collected.
  const memo = new WeakMap<Post, string>();
  const memoized = (post: Post) => {
    let json = memo.get(post);
    if (json === undefined) {
      json = serialize(post);
      if (cache.holds(post)) memo.set(post, json);
    }
    return json;
  };
  return { post: memoized, page: (page) => pageJson(page, memoized) };
}

function pageJson(page: PostPage, item: (post: Post) => string): string {
  const { posts } = page;
  let content = posts.length > 0 ? item(posts[0] as Post) : "";
  for (let i = 1; i < posts.length; i++) content += `,${item(posts[i] as Post)}`;
  const nextCursor = page.nextCursor === null ? "null" : JSON.stringify(page.nextCursor);
  return `{"content":[${content}],"size":${page.size},"nextCursor":${nextCursor}}`;
}

/** Maps a domain post to its wire form, `PostSchema`'s properties in its order. */
export function toPostJson(post: Post, format: TimestampFormatter): PostJson {
  return {
    id: post.id,
    title: post.title,
    content: post.content,
    createdAt: format(post.createdAt),
    updatedAt: format(post.updatedAt),
    user: { id: post.author.id, email: post.author.email },
  };
}
