import { createHash } from "node:crypto";
import { canonicalTimeZone, type ExpectedVersions, type Post, type PostPage, parseId } from "@posts/domain";
import type { EntityTag, EntityTagCondition } from "../http/entity-tag-condition.js";

/**
 * Names the wire form of a post. Change it whenever the same stored version would serialize
 * differently (a property added, a format changed), so that no client revalidates a copy in
 * the old form, and no If-Match written against it applies.
 */
const WIRE_FORM = "post-wire-1";

/** Room for the ids and versions of the largest page (100 posts and the extra one), 8 bytes each. */
const PAGE_NUMBERS = Buffer.alloc(8 * 2 * 101);

/** The entity tags of the posts resource (docs/conditional-requests.md#entity-tags), for one app. */
export interface PostEntityTags {
  /**
   * The strong tag of one post: the same for the same version (id and updatedAt) on every
   * instance with the same APP_TIME_ZONE, in GET and PATCH answers alike, and another one after
   * every change, since updatedAt moves strictly forward.
   */
  post(post: Pick<Post, "id" | "updatedAt">): EntityTag;
  /**
   * The weak tag of a list page. A post's body is fixed by its id and version, so the page's
   * body is fixed by its size, its nextCursor and the id and version of each post it holds: the
   * tag is a hash of those, and changes whenever the body would.
   */
  page(page: PostPage): EntityTag;
  /**
   * What an `If-Match` on post `postId` (the path parameter) asks of the domain: `undefined`
   * (unconditional) when the header is absent or `*`, else the versions of the strong tags that
   * this app made for this post id. Weak tags, tags of another post or another wire form, and
   * anything else decode to nothing, so a list of only those, or a malformed header, is `[]`:
   * it matches no version.
   */
  expectedVersions(condition: EntityTagCondition | undefined, postId: string): ExpectedVersions | undefined;
}

/**
 * Builds the entity tags of an app serving timestamps in `timeZone`. The zone is folded into
 * every tag (a short digest, computed once): the same version reads differently in another
 * zone, and a strong tag promises identical bytes.
 */
export function postEntityTags(timeZone: string): PostEntityTags {
  // Canonical, as the formatter uses it: "asia/seoul" and "Asia/Seoul" write the same bytes.
  const zone = canonicalTimeZone(timeZone);
  const variant = createHash("sha256").update(`${WIRE_FORM}\n${zone}`).digest("base64url").slice(0, 8);
  const opaqueOf = (id: number, version: number) => `${id}.${version.toString(36)}.${variant}`;

  return {
    post: (post) => ({ weak: false, opaque: opaqueOf(post.id, post.updatedAt.getTime()) }),

    page: (page) => {
      const { posts } = page;
      // The ids and versions as numbers, not as text: V8 keeps the decimal text of a number in a
      // cache in the old generation, so thousands of different ones a second would grow the heap
      // and the RSS with it. One hash per request, over a buffer reused for every page.
      // Little-endian whatever the machine, so that every instance makes the same tag.
      const length = 16 * posts.length;
      const numbers = length <= PAGE_NUMBERS.length ? PAGE_NUMBERS : Buffer.alloc(length);
      for (let i = 0; i < posts.length; i++) {
        const post = posts[i] as Post;
        numbers.writeDoubleLE(post.id, 16 * i);
        numbers.writeDoubleLE(post.updatedAt.getTime(), 16 * i + 8);
      }
      const digest = createHash("sha256")
        .update(`${variant}\n${page.size}\n${page.nextCursor ?? ""}\n`)
        .update(numbers.subarray(0, length))
        .digest("base64url");
      // 128 bits: a weak validator needs no more to tell two pages apart.
      return { weak: true, opaque: digest.slice(0, 22) };
    },

    expectedVersions: (condition, postId) => {
      if (condition === undefined || condition === "*") return undefined;
      const id = parseId(postId);
      if (id === undefined) return [];
      const prefix = `${id}.`;
      const suffix = `.${variant}`;
      const versions: Date[] = [];
      for (const tag of condition) {
        // Strong comparison (RFC 9110 §13.1.1): a weak tag never matches.
        if (tag.weak || !tag.opaque.startsWith(prefix) || !tag.opaque.endsWith(suffix)) continue;
        const encoded = tag.opaque.slice(prefix.length, tag.opaque.length - suffix.length);
        const version = Number.parseInt(encoded, 36);
        // Only the exact text this app writes: "0a" and "a" are one number but two tags.
        if (Number.isSafeInteger(version) && opaqueOf(id, version) === tag.opaque) {
          const instant = new Date(version);
          if (!Number.isNaN(instant.getTime())) versions.push(instant);
        }
      }
      return versions;
    },
  };
}
