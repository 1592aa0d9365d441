import { isWhole, type Post, type PostPage } from "@posts/domain";
import { JSON_THREAD_MIN_BYTES, type JsonThread } from "../http/json-thread.js";
import type { TimestampFormatter } from "../http/timestamp-formatter.js";
import type { PostCacheAccess } from "../http-app-options.js";
import type { PostJson } from "../schemas/post-schemas.js";

/**
 * The JSON of the posts resource's answers, as the UTF-8 bytes sent: the one serializer every
 * route that answers with a post or a page uses, so that the same post reads byte for byte the
 * same in GET by id, PATCH and every list and search page.
 */
export interface PostSerializer {
  /**
   * A post as `PostSchema` describes it (docs/posts.md#a-post-on-the-wire): {@link postJson}, in
   * UTF-8; written on the JSON thread, so answered as a promise, when its content is of
   * megabytes.
   */
  post(post: Post): Buffer | Promise<Buffer>;
  /**
   * A page as `PostPageSchema` describes it: its posts as {@link PostSerializer.post} writes them,
   * its size and nextCursor. Every post must be whole (no outline).
   */
  page(page: PostPage): Buffer;
  /** What {@link page} writes before the first post: a page written in parts is the same bytes. */
  pageStart(): Buffer;
  /**
   * The `index`th post (from 0) of a page written in parts: the comma that goes before it (none
   * for the first), then its bytes, as {@link postParts} writes them.
   */
  pageItem(post: Post, index: number): Iterable<Buffer>;
  /**
   * The bytes of {@link post}, in parts: a post whose content is over {@link CONTENT_PART_CHARACTERS}
   * characters comes in parts of about that many, each made when the one before was taken, so that
   * no copy of the whole content is made besides the post's own.
   */
  postParts(post: Post): Iterable<Buffer>;
  /** What {@link page} writes after the last post of `page`. */
  pageEnd(page: PostPage): Buffer;
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
 * posts' bytes. Given a repository's `cache`, the JSON of each post it holds is kept beside
 * the post for as long as that object lives, and sent again from there: a page of cached posts
 * becomes a copy of bytes. Given a JSON `thread`, a post whose content has
 * `JSON_THREAD_MIN_BYTES` characters or more is written there, off the event loop (but for
 * {@link PostSerializer.postParts}, which writes a slice at a time).
 *
 * Why bytes and not text: a page's text is encoded to UTF-8 again at every answer, and one post
 * with a character beyond Latin-1 (a Korean title) makes the whole page a two-byte string,
 * whose encoding costs several times what copying kept bytes does.
 */
export function postSerializer(
  format: TimestampFormatter,
  cache?: PostCacheAccess,
  thread?: JsonThread,
): PostSerializer {
  const serialize = (post: Post) => Buffer.from(postJson(post, format));
  const large = (post: Post): Promise<Buffer> | undefined =>
    thread === undefined || post.content.length < JSON_THREAD_MIN_BYTES
      ? undefined
      : thread.stringify(toPostJson(post, format)).then((json) => json ?? serialize(post));
  const inParts = (whole: (post: Post) => Buffer) => {
    const postParts = (post: Post): Iterable<Buffer> =>
      post.content.length > CONTENT_PART_CHARACTERS ? contentInParts(post, format) : [whole(post)];
    return {
      pageStart: () => PAGE_START,
      pageEnd,
      postParts,
      pageItem: function* (post: Post, index: number) {
        if (index > 0) yield COMMA_BYTES;
        yield* postParts(post);
      },
    };
  };
  if (cache === undefined) {
    return {
      post: (post) => large(post) ?? serialize(post),
      page: (page) => pageJson(page, serialize),
      ...inParts(serialize),
    };
  }

  // Weak, and only for posts the cache holds: the memo never keeps a post alive, so it holds
  // no more than the cache (whose byte bound counts these bytes) plus the requests in flight, and
  // a post read once (not cached) costs no entry that would only wait to be collected.
  const memo = new WeakMap<Post, KeptJson>();
  const memoized = (post: Post): KeptJson => {
    let json = memo.get(post);
    if (json === undefined) {
      if (!cache.holds(post)) return serialize(post);
      json = kept(postJson(post, format));
      memo.set(post, json);
    }
    return json;
  };
  const bytes = (post: Post) => {
    const json = memoized(post);
    return typeof json === "string" ? Buffer.from(json, "latin1") : json;
  };
  return {
    post: (post) => large(post) ?? bytes(post),
    page: (page) => pageJson(page, memoized),
    ...inParts(bytes),
  };
}

/**
 * Characters of content in one part of a large post's JSON: 32 Ki, so that each part's text and
 * bytes (at most 192 KiB even when every character is escaped) are small objects that V8 frees
 * by its young generation's collections as soon as they are written, rather than large ones that
 * wait for a full collection while the next posts are read.
 */
export const CONTENT_PART_CHARACTERS = 32 * 1024;
const CONTENT_KEY = ',"content":"';

/**
 * `post`'s JSON as {@link postJson} writes it, in parts: what comes before the content's text,
 * the text escaped a slice at a time, and what follows it. JSON escapes each character on its
 * own, but for the two halves of a surrogate pair, which a cut never separates.
 */
function* contentInParts(post: Post, format: TimestampFormatter): Generator<Buffer> {
  const around = postJson({ ...post, content: "" }, format);
  // The first `,"content":"` is the property's: a title's quotes are escaped, so no title holds it.
  const at = around.indexOf(CONTENT_KEY) + CONTENT_KEY.length;
  yield Buffer.from(around.slice(0, at));
  yield* escapedInParts(post.content);
  yield Buffer.from(around.slice(at));
}

/**
 * `text` JSON-escaped (as inside a JSON string's quotes) and encoded in UTF-8, in parts of at most
 * {@link CONTENT_PART_CHARACTERS} characters each, a surrogate pair never split: joined, the bytes
 * of `JSON.stringify(text)` without its quotes.
 */
export function* escapedInParts(text: string): Generator<Buffer> {
  for (let start = 0; start < text.length; ) {
    let end = Math.min(start + CONTENT_PART_CHARACTERS, text.length);
    if (end < text.length && isHighSurrogate(text.charCodeAt(end - 1))) end--;
    yield Buffer.from(JSON.stringify(text.slice(start, end)).slice(1, -1));
    start = end;
  }
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

/** What follows a page's last post. */
function pageEnd(page: PostPage): Buffer {
  const nextCursor = page.nextCursor === null ? "null" : JSON.stringify(page.nextCursor);
  return Buffer.from(`],"size":${page.size},"nextCursor":${nextCursor}}`);
}

/**
 * A post's JSON as kept beside a cached post: its UTF-8 bytes, or, when every character is
 * ASCII (the bytes then being the characters), the text itself, which a one-byte V8 string holds
 * at a byte a character, copied into an answer as fast as bytes.
 */
type KeptJson = Buffer | string;

/**
 * `text` to keep: an ASCII text as a flat string of its own, any other as UTF-8 bytes in memory
 * of their own. Why not always bytes: each Buffer costs an ArrayBuffer, its backing store and a
 * heap allocation besides its bytes, about 200 bytes of RSS a post more than a string, which a
 * full cache multiplies into a visible share of the process. Why a copy of the string:
 * `JSON.stringify` answers a post's JSON as a tree of parts (a cons string), which costs more
 * and would be flattened at every copy. Why memory of their own for bytes: `Buffer.from` cuts
 * short texts from a shared slab, which one kept slice would hold whole for as long as the post
 * stays cached.
 */
function kept(text: string): KeptJson {
  const length = Buffer.byteLength(text);
  if (length === text.length) return Buffer.from(text, "latin1").toString("latin1");
  const bytes = Buffer.allocUnsafeSlow(length);
  bytes.write(text);
  return bytes;
}

const PAGE_START = Buffer.from('{"content":[');
const COMMA = 0x2c; // ","
const COMMA_BYTES = Buffer.from([COMMA]);

/** A page whose posts are all whole, in one buffer. */
function pageJson(page: PostPage, item: (post: Post) => KeptJson): Buffer {
  const { posts } = page;
  const parts: KeptJson[] = [];
  // An ASCII string's length is its UTF-8 byte count (kept): the page is measured, then written once.
  let length = PAGE_START.length + Math.max(0, posts.length - 1);
  for (const post of posts) {
    if (!isWhole(post)) throw new TypeError(`post ${post.id} is an outline: write its page in parts`);
    const part = item(post);
    parts.push(part);
    length += part.length;
  }
  const end = pageEnd(page);
  const json = Buffer.allocUnsafe(length + end.length);
  let at = PAGE_START.copy(json, 0);
  for (let i = 0; i < parts.length; i++) {
    if (i > 0) json[at++] = COMMA;
    const part = parts[i] as KeptJson;
    at += typeof part === "string" ? json.write(part, at, "latin1") : part.copy(json, at);
  }
  end.copy(json, at);
  return json;
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
