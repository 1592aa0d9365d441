/**
 * The repository stands alone: no Markdown file links outside it or to a file it does not have, and
 * no comment, test or script cites a page or heading it does not have. A clone is all a reader
 * gets, so a link that resolves only on the machine it was written on is a dead link for everybody
 * else.
 */
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  anchorsOf,
  brokenCodeReferences,
  brokenLinks,
  codeFilesOf,
  codeReferencesOf,
  linksOf,
  markdownFilesOf,
  repositoryLinks,
  whyBroken,
  whyCodeReferenceBroken,
} from "./markdown-links.js";

const ROOT = fileURLToPath(new URL("..", import.meta.url));

describe("the repository's Markdown", () => {
  it("links only to files inside the repository that exist", () => {
    const broken = brokenLinks(ROOT).map(
      ({ file, line, target, reason }) => `${file}:${line} ${target}: ${reason}`,
    );
    expect(broken).toEqual([]);
  });

  it("is read whole: the READMEs, the docs and their relative links are all found", () => {
    const files = markdownFilesOf(ROOT);
    expect(files).toEqual(expect.arrayContaining(["README.md", "ARCHITECTURE.md", "docs/README.md"]));
    expect(files.some((file) => file.includes("node_modules"))).toBe(false);
    const relativeLinks = repositoryLinks(ROOT).filter(
      ({ target }) => !/^[a-z][a-z0-9+.-]*:|^#/i.test(target),
    );
    expect(relativeLinks.length).toBeGreaterThan(20);
  });
});

describe("the repository's code, tests and scripts", () => {
  it("cite only pages and headings the repository has", () => {
    const broken = brokenCodeReferences(ROOT).map(
      ({ file, line, target, reason }) => `${file}:${line} ${target}: ${reason}`,
    );
    expect(broken).toEqual([]);
  });

  it("are read whole: the sources' references to docs/ are all found", () => {
    const files = codeFilesOf(ROOT);
    expect(files).toEqual(expect.arrayContaining(["scripts/markdown-links.ts"]));
    expect(files.some((file) => file.includes("node_modules"))).toBe(false);
    expect(files.some((file) => file.startsWith("packages/adapters-http/src/"))).toBe(true);
  });
});

describe("the link check", () => {
  let root: string;

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), "markdown-links-"));
    await mkdir(join(root, "docs"));
    await writeFile(join(root, "README.md"), "");
    await writeFile(
      join(root, "docs", "posts.md"),
      ["# Posts", "", "## Pages: `GET /api/v1/posts`", "", "## Search", "", "## Search", ""].join("\n"),
    );
  });

  afterAll(async () => {
    await rm(root, { recursive: true, force: true });
  });

  const check = (file: string, target: string) => whyBroken(root, { file, line: 1, target });

  it("refuses a link that climbs out of the repository, even to a file that exists there", () => {
    expect(check("README.md", "../outside/notes.md")).toBe("leaves the repository");
    expect(check("docs/posts.md", "../../README.md")).toBe("leaves the repository");
    expect(check("README.md", "/etc/hostname")).toBe("an absolute path leaves the repository");
    expect(check("README.md", "file:///etc/hostname")).toBe("a file: URL leaves the repository");
  });

  it("resolves a relative link from its file's folder and refuses one to a missing file", () => {
    expect(check("docs/posts.md", "../README.md")).toBeUndefined();
    expect(check("README.md", "docs/")).toBeUndefined();
    expect(check("docs/posts.md", "README.md")).toBe("no such file in the repository");
    expect(check("README.md", "docs/errors.md")).toBe("no such file in the repository");
    expect(check("README.md", "docs/po%73ts.md")).toBeUndefined();
  });

  it("leaves web links and same-page anchors alone", () => {
    expect(check("README.md", "https://example.com/x")).toBeUndefined();
    expect(check("README.md", "http://localhost:8080/docs")).toBeUndefined();
    expect(check("README.md", "mailto:writer@example.com")).toBeUndefined();
  });

  it("holds a fragment into a Markdown file, or within the page, to a heading there", () => {
    expect(check("README.md", "docs/posts.md#pages-get-apiv1posts")).toBeUndefined();
    expect(check("README.md", `docs/posts.md${"#search-1"}`)).toBeUndefined();
    expect(check("docs/posts.md", "#search")).toBeUndefined();
    expect(check("README.md", `docs/posts.md${"#pages"}`)).toBe("no heading #pages there");
    expect(check("docs/posts.md", "#quick-start")).toBe("no heading #quick-start there");
    expect(anchorsOf('# Quick start\n\n<a name="legacy"></a>\n')).toEqual(new Set(["quick-start", "legacy"]));
  });

  it("finds inline, reference, image, autolink and HTML targets, and none in code", () => {
    const markdown = [
      "See [the docs](docs/README.md) and ![a picture](img/p.png) and <https://example.com>.",
      "",
      "A [reference][ref] link.",
      "",
      '<a href="../outside.md">raw</a>',
      "",
      "`[not](a-link.md)` in inline code.",
      "",
      "```json",
      '{ "content": [ "x" ], "see": [this](not-a-link.md) }',
      "```",
      "",
      "[ref]: ARCHITECTURE.md",
    ].join("\n");
    expect(linksOf("README.md", markdown).map(({ target }) => target)).toEqual([
      "docs/README.md",
      "img/p.png",
      "https://example.com",
      "ARCHITECTURE.md",
      "../outside.md",
    ]);
  });
});

describe("the reference check of code", () => {
  let root: string;

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), "code-references-"));
    await mkdir(join(root, "docs"));
    await mkdir(join(root, "packages", "x", "src"), { recursive: true });
    await writeFile(
      join(root, "docs", "posts.md"),
      ["# Posts", "", "## Change: `PATCH /api/v1/posts/{id}`", ""].join("\n"),
    );
  });

  afterAll(async () => {
    await rm(root, { recursive: true, force: true });
  });

  // Built from parts, so that the repository-wide check above does not take them for references.
  const page = (name: string) => ["docs", name].join("/");
  const check = (target: string) =>
    whyCodeReferenceBroken(root, { file: "packages/x/src/deep/file.ts", line: 1, target });

  it("finds a page and its heading in comments and strings, one per occurrence, with its line", () => {
    const text = [
      `/** The rule (${page("posts.md#change-patch-apiv1postsid")}). */`,
      `const section = "${page("errors.md")}";`,
      `// not a reference: ../../${page("posts.md")}, x${page("posts.md")}, ${page("notes.txt")}`,
    ].join("\n");
    expect(codeReferencesOf("a.ts", text)).toEqual([
      { file: "a.ts", line: 1, target: page("posts.md#change-patch-apiv1postsid") },
      { file: "a.ts", line: 2, target: page("errors.md") },
    ]);
  });

  it("reads a reference from the repository's root, wherever the citing file is", () => {
    expect(check(page("posts.md"))).toBeUndefined();
    expect(check(page("posts.md#change-patch-apiv1postsid"))).toBeUndefined();
  });

  it("refuses a reference to a page or a heading the repository does not have", () => {
    expect(check(page("errors.md"))).toBe("no such file in the repository");
    expect(check(page("posts.md#patch"))).toBe("no heading #patch there");
  });
});
