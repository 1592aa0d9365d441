/**
 * The links of the repository's Markdown files, and which of them break the rule that the
 * repository stands alone: a relative link must name a file or folder that exists inside the
 * repository, and its `#fragment`, when it points into a Markdown file (or is a link within the
 * same page), must name a heading there. Links to the web (`https:`, `mailto:`…) are not ours to
 * check; an absolute path (`/…`) or a `file:` URL leaves the repository.
 *
 * The files are parsed with markdown-it, so a bracket in a code block or in inline code is not
 * taken for a link, and reference-style links are resolved as a renderer resolves them. Heading
 * anchors are made as GitHub makes them, by github-slugger.
 *
 * Code, tests and scripts cite the same pages in their comments and strings, from the repository's
 * root (`docs/posts.md#search`): {@link brokenCodeReferences} holds those to the same rule.
 */
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, statSync } from "node:fs";
import { basename, dirname, isAbsolute, relative, resolve, sep } from "node:path";
import GithubSlugger from "github-slugger";
import MarkdownIt from "markdown-it";

/** One link target as written in a Markdown file. */
export interface MarkdownLink {
  /** The Markdown file, relative to the repository root, with `/` separators. */
  readonly file: string;
  /** The 1-based line of the block the link is in. */
  readonly line: number;
  /** The target exactly as written (after reference resolution). */
  readonly target: string;
}

/** A link that breaks the rule, with the reason in a few words. */
export interface BrokenLink extends MarkdownLink {
  readonly reason: string;
}

const parser = new MarkdownIt({ html: true });
// A URL scheme (`https:`, `mailto:`); a Windows drive letter is not one, but nobody writes those here.
const SCHEME = /^[a-z][a-z0-9+.-]*:/i;
// href/src attributes of raw HTML (`<a href="…">`, `<img src="…">`), which markdown-it passes through as text.
const HTML_TARGET = /\b(?:href|src)\s*=\s*(?:"([^"]*)"|'([^']*)')/gi;
// id/name attributes of raw HTML (`<a name="…">`), which a link's fragment may name as well as a heading.
const HTML_ANCHOR = /\b(?:id|name)\s*=\s*"([^"]*)"/gi;

/**
 * Every link and image target of one Markdown text: inline and reference-style links, images,
 * autolinks, and the `href`/`src` of raw HTML. Code blocks and inline code contribute none.
 */
export function linksOf(file: string, markdown: string): MarkdownLink[] {
  const links: MarkdownLink[] = [];
  for (const block of parser.parse(markdown, {})) {
    const line = (block.map?.[0] ?? 0) + 1;
    if (block.type === "html_block") {
      for (const target of htmlTargets(block.content)) links.push({ file, line, target });
    }
    for (const token of block.children ?? []) {
      const target =
        token.type === "link_open"
          ? token.attrGet("href")
          : token.type === "image"
            ? token.attrGet("src")
            : null;
      if (target !== null) links.push({ file, line, target: String(target) });
      if (token.type === "html_inline") {
        for (const html of htmlTargets(token.content)) links.push({ file, line, target: html });
      }
    }
  }
  return links;
}

function htmlTargets(html: string): string[] {
  return [...html.matchAll(HTML_TARGET)].map((match) => match[1] ?? match[2] ?? "");
}

/**
 * The anchors a renderer gives the headings of one Markdown text (GitHub's: lower case, spaces to
 * `-`, punctuation dropped, `-1`, `-2`… for repeats), and the `id`/`name` of raw HTML elements.
 */
export function anchorsOf(markdown: string): Set<string> {
  const slugger = new GithubSlugger();
  const anchors = new Set<string>();
  const blocks = parser.parse(markdown, {});
  blocks.forEach((block, index) => {
    if (block.type === "heading_open") {
      // The heading's text as rendered: its words and its inline code, without the markup.
      const text = (blocks[index + 1]?.children ?? [])
        .filter((token) => token.type === "text" || token.type === "code_inline")
        .map((token) => token.content)
        .join("");
      anchors.add(slugger.slug(text));
    }
    const html =
      block.type === "html_block" ? [block] : (block.children ?? []).filter((t) => t.type === "html_inline");
    for (const element of html) {
      for (const match of element.content.matchAll(HTML_ANCHOR)) anchors.add(match[1] ?? "");
    }
  });
  return anchors;
}

/**
 * Why `link` breaks the rule, or `undefined` when it keeps it. A relative target is resolved from
 * the folder of its file, without its `#fragment` or `?query`, and must exist under `root`; a
 * fragment into a Markdown file must be one of its {@link anchorsOf}.
 */
export function whyBroken(root: string, link: MarkdownLink): string | undefined {
  const { target } = link;
  if (/^file:/i.test(target)) return "a file: URL leaves the repository";
  if (SCHEME.test(target) || target.startsWith("//")) return undefined;
  const path = safeDecode(target.replace(/[?#].*$/s, ""));
  const fragment = safeDecode(/#(.*)$/s.exec(target)?.[1] ?? "");
  if (path === undefined || fragment === undefined) return "not a valid URL";
  if (isAbsolute(path)) return "an absolute path leaves the repository";
  const resolved = resolve(root, dirname(link.file), path === "" ? basename(link.file) : path);
  const inside = relative(root, resolved);
  if (inside === ".." || inside.startsWith(`..${sep}`) || isAbsolute(inside)) {
    return "leaves the repository";
  }
  if (!existsSync(resolved)) return "no such file in the repository";
  if (fragment !== "" && resolved.endsWith(".md") && statSync(resolved).isFile()) {
    if (!anchorsOfFile(resolved).has(fragment)) return `no heading #${fragment} there`;
  }
  return undefined;
}

// Parsed once per version of a page: an index of a long page links to it dozens of times.
const anchorsByFile = new Map<string, { readonly mtimeMs: number; readonly anchors: Set<string> }>();

function anchorsOfFile(path: string): Set<string> {
  const { mtimeMs } = statSync(path);
  const known = anchorsByFile.get(path);
  if (known !== undefined && known.mtimeMs === mtimeMs) return known.anchors;
  const anchors = anchorsOf(readFileSync(path, "utf8"));
  anchorsByFile.set(path, { mtimeMs, anchors });
  return anchors;
}

function safeDecode(path: string): string | undefined {
  try {
    return decodeURIComponent(path);
  } catch {
    return undefined;
  }
}

/**
 * The Markdown files git would commit under `root`: tracked ones and new ones not ignored, so
 * `node_modules`, build output and the embedded database's folder are never read.
 */
export function markdownFilesOf(root: string): string[] {
  const listed = execFileSync(
    "git",
    ["ls-files", "--cached", "--others", "--exclude-standard", "-z", "--", "*.md"],
    {
      cwd: root,
      encoding: "utf8",
    },
  );
  // --cached lists a tracked file deleted in the work tree too; only what is there counts.
  return listed
    .split("\0")
    .filter((file) => file !== "" && existsSync(resolve(root, file)))
    .sort();
}

/** Every link of every Markdown file of the repository at `root`, broken or not. */
export function repositoryLinks(root: string): MarkdownLink[] {
  return markdownFilesOf(root).flatMap((file) => linksOf(file, readFileSync(resolve(root, file), "utf8")));
}

/** The links of the repository at `root` that break the rule, each with its reason. */
export function brokenLinks(root: string): BrokenLink[] {
  return repositoryLinks(root).flatMap((link) => {
    const reason = whyBroken(root, link);
    return reason === undefined ? [] : [{ ...link, reason }];
  });
}

/**
 * A page of the repository named in the text of a file that is not Markdown (a comment, a test's
 * name, a string), from the repository's root: `docs/posts.md#search`, `bench/RESULTS.md#events`.
 * Only paths under the repository's top folders that end in `.md` are taken for references.
 */
const CODE_REFERENCE =
  /(?<![\w./@-])((?:docs|bench|scripts|packages|examples)\/[\w./-]*?\.md)(#[\p{L}\p{N}_-]+)?/gu;

/** The kinds of file whose text is searched for {@link CODE_REFERENCE}s. */
const CODE_FILES = ["*.ts", "*.mts", "*.cts", "*.js", "*.mjs", "*.cjs", "*.sh", "*.yaml", "*.yml"];

/**
 * Every reference to a Markdown page of the repository in one text that is not Markdown, each
 * with its 1-based line. The target is the path from the repository's root, with its fragment.
 */
export function codeReferencesOf(file: string, text: string): MarkdownLink[] {
  const references: MarkdownLink[] = [];
  text.split("\n").forEach((content, index) => {
    for (const match of content.matchAll(CODE_REFERENCE)) {
      references.push({ file, line: index + 1, target: `${match[1]}${match[2] ?? ""}` });
    }
  });
  return references;
}

/**
 * Why a reference from code breaks the rule, or `undefined` when it keeps it: its file must exist
 * under `root` and its fragment, when it has one, must be one of that page's {@link anchorsOf}.
 * Unlike a Markdown link, it is read from the repository's root, wherever the citing file is.
 */
export function whyCodeReferenceBroken(root: string, reference: MarkdownLink): string | undefined {
  return whyBroken(root, { ...reference, file: "README.md" });
}

/** The files git would commit under `root` whose text {@link codeReferencesOf} searches. */
export function codeFilesOf(root: string): string[] {
  const listed = execFileSync(
    "git",
    ["ls-files", "--cached", "--others", "--exclude-standard", "-z", "--", ...CODE_FILES],
    { cwd: root, encoding: "utf8" },
  );
  return listed
    .split("\0")
    .filter((file) => file !== "" && existsSync(resolve(root, file)))
    .sort();
}

/** The references from code, tests and scripts of the repository at `root` that break the rule. */
export function brokenCodeReferences(root: string): BrokenLink[] {
  return codeFilesOf(root).flatMap((file) =>
    codeReferencesOf(file, readFileSync(resolve(root, file), "utf8")).flatMap((reference) => {
      const reason = whyCodeReferenceBroken(root, reference);
      return reason === undefined ? [] : [{ ...reference, reason }];
    }),
  );
}
