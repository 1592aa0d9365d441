import type { Post, PostPage } from "@posts/domain";
import type { TimestampFormatter } from "../http/timestamp-formatter.js";
import type { PostCacheAccess } from "../http-app-options.js";
import type { PostJson } from "../schemas/post-schemas.js";

/**
 * The JSON of the posts resource's answers, as the UTF-8 bytes sent: the one serializer every
 * route that answers with a post or a page uses, so that the same post reads byte for byte the
 * same in GET by id, PATCH and every list and search page.
 */
export interface PostSerializer {
  /** A post as `PostSchema` describes it (CONTRACT §1): {@link postJson}, in UTF-8. */
  post(post: Post): Buffer;
  /** A page as `PostPageSchema` describes it: its posts as {@link PostSerializer.post} writes them, its size and nextCursor. */
  page(page: PostPage): Buffer;
}

/**
 * A post's JSON text: `JSON.stringify(toPostJson(post, format))`, whose properties come in
 * `PostSchema`'s order, as Fastify's schema serializer wrote them (a test holds the two equal).
 */
export function postJson(post: Post, format: TimestampFormatter): string {
  return JSON.stringify(toPostJson(post, format));
}

/**
 * Builds the serializer for timestamps written by `format`; a page is assembled around its
 * posts' bytes. Given a repository's `cache`, the bytes of each post it holds are kept beside
 * the post for as long as that object lives, and sent again from there: a page of cached posts
 * becomes a copy of bytes.
 *
 * Why bytes and not text: a page's text is encoded to UTF-8 again at every answer, and one post
 * with a character beyond Latin-1 (a Korean title) makes the whole page a two-byte string,
 * whose encoding took about 19 µs of a 10 KB page against 3.5 µs for copying kept bytes
 * (bench/RESULTS.md, "Pages read together").
 */
export function postSerializer(format: TimestampFormatter, cache?: PostCacheAccess): PostSerializer {
  const serialize = (post: Post) => Buffer.from(postJson(post, format));
  if (cache === undefined) return { post: serialize, page: (page) => pageJson(page, serialize) };

  // Weak, and only for posts the cache holds: the memo never keeps a post alive, so it holds
  // no more than the cache (whose byte bound counts these bytes) plus the requests in flight, and
  // a post read once (not cached) costs no entry that would only wait to be collected.
  const memo = new WeakMap<Post, Buffer>();
  const memoized = (post: Post) => {
    let json = memo.get(post);
    if (json === undefined) {
      if (!cache.holds(post)) return serialize(post);
      json = ownBytes(postJson(post, format));
      memo.set(post, json);
    }
    return json;
  };
  return { post: memoized, page: (page) => pageJson(page, memoized) };
}

/**
 * `text` in UTF-8, in memory of its own: `Buffer.from` cuts short texts from a shared slab,
 * which one kept slice would hold whole for as long as the post stays cached.
 */
function ownBytes(text: string): Buffer {
  const bytes = Buffer.allocUnsafeSlow(Buffer.byteLength(text));
  bytes.write(text);
  return bytes;
}

const PAGE_START = Buffer.from('{"content":[');
const COMMA = Buffer.from(",");

function pageJson(page: PostPage, item: (post: Post) => Buffer): Buffer {
  const { posts } = page;
  const parts: Buffer[] = [PAGE_START];
  for (let i = 0; i < posts.length; i++) {
    if (i > 0) parts.push(COMMA);
    parts.push(item(posts[i] as Post));
  }
  const nextCursor = page.nextCursor === null ? "null" : JSON.stringify(page.nextCursor);
  parts.push(Buffer.from(`],"size":${page.size},"nextCursor":${nextCursor}}`));
  return Buffer.concat(parts);
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
