import type { Post, PostPage } from "@posts/domain";
import { describe, expect, it } from "vitest";
import { type EntityTag, parseEntityTagCondition } from "../../src/http/entity-tag-condition.js";
import { postEntityTags } from "../../src/routes/post-entity-tags.js";

const CREATED = new Date("2026-11-22T10:15:30.123Z");

function aPostAt(id: number, updatedAt: Date): Post {
  return {
    id,
    title: "t",
    content: "c",
    createdAt: CREATED,
    updatedAt,
    author: { id: 1, email: "a@example.com" },
  };
}

const later = (ms: number) => new Date(CREATED.getTime() + ms);
const ifMatch = (...tags: EntityTag[]) =>
  tags.map((tag) => (tag.weak ? `W/"${tag.opaque}"` : `"${tag.opaque}"`)).join(", ");

describe("postEntityTags", () => {
  const tags = postEntityTags("UTC");

  it("tags one post strongly, the same for the same version on every instance, another for every other version", () => {
    const tag = tags.post(aPostAt(7, CREATED));
    expect(tag.weak).toBe(false);
    expect(tag.opaque).toMatch(/^[\x21\x23-\x7e]+$/);
    expect(postEntityTags("UTC").post(aPostAt(7, new Date(CREATED)))).toEqual(tag);
    expect(tags.post(aPostAt(7, later(1)))).not.toEqual(tag);
    expect(tags.post(aPostAt(8, CREATED))).not.toEqual(tag);
  });

  it("folds the time zone in (the same version reads differently there), by its canonical name", () => {
    const post = aPostAt(7, CREATED);
    expect(postEntityTags("Asia/Seoul").post(post)).not.toEqual(tags.post(post));
    expect(postEntityTags("asia/seoul").post(post)).toEqual(postEntityTags("Asia/Seoul").post(post));
  });

  it("tags a page weakly, changing whenever its size, nextCursor or any post's id or version does", () => {
    const page = (overrides: Partial<PostPage> = {}): PostPage => ({
      posts: [aPostAt(3, CREATED), aPostAt(2, CREATED)],
      size: 2,
      nextCursor: "abc",
      ...overrides,
    });
    const tag = tags.page(page());
    expect(tag.weak).toBe(true);
    expect(tag.opaque).toMatch(/^[\x21\x23-\x7e]+$/);
    expect(tags.page(page())).toEqual(tag);
    const variants = [
      page({ size: 3 }),
      page({ nextCursor: null }),
      page({ nextCursor: "abd" }),
      page({ posts: [aPostAt(3, CREATED)] }),
      page({ posts: [aPostAt(3, later(1)), aPostAt(2, CREATED)] }),
      page({ posts: [aPostAt(4, CREATED), aPostAt(2, CREATED)] }),
      page({ posts: [] }),
    ];
    const opaques = new Set([tag.opaque, ...variants.map((variant) => tags.page(variant).opaque)]);
    expect(opaques.size).toBe(variants.length + 1);
    expect(postEntityTags("Asia/Seoul").page(page())).not.toEqual(tag);
  });

  describe("expectedVersions (If-Match)", () => {
    const post = aPostAt(7, later(5));
    const current = tags.post(post);
    const versions = (header: string | undefined, id = "7") =>
      tags.expectedVersions(parseEntityTagCondition(header), id);

    it("is unconditional without If-Match or with *", () => {
      expect(versions(undefined)).toBeUndefined();
      expect(versions("*")).toBeUndefined();
    });

    it("decodes the versions of this post's strong tags, in a list, whatever the id's leading zeros", () => {
      expect(versions(ifMatch(current))).toEqual([post.updatedAt]);
      expect(versions(ifMatch(current), "007")).toEqual([post.updatedAt]);
      const older = tags.post(aPostAt(7, CREATED));
      expect(versions(`"nope", ${ifMatch(older)}, ${ifMatch(current)}`)).toEqual([CREATED, post.updatedAt]);
    });

    it("decodes nothing from weak tags, other posts' tags, other zones' tags, or tags it did not write", () => {
      const skewed = current.opaque.replace(/\.([0-9a-z]+)\./, ".0$1.");
      for (const header of [
        ifMatch({ weak: true, opaque: current.opaque }),
        ifMatch(tags.post(aPostAt(8, post.updatedAt))),
        ifMatch(postEntityTags("Asia/Seoul").post(post)),
        `"${skewed}"`,
        `"${current.opaque}x"`,
        `"x${current.opaque}"`,
        '"7..AAAAAAAA"',
        '"anything"',
        "",
        "garbage",
        `${ifMatch(current)} garbage`,
      ]) {
        expect(versions(header), header).toEqual([]);
      }
      expect(versions(ifMatch(current), "8")).toEqual([]);
      // An id that names no post: the domain answers 404 before it looks at versions.
      expect(versions(ifMatch(current), "99999999999999999999")).toEqual([]);
    });
  });
});
