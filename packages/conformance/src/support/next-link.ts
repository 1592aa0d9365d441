import type { Reply } from "../http/api-client.js";
import { expectThat } from "./expectations.js";

/**
 * The target of the reply's `Link: <absolute URL>; rel="next"`
 * (docs/posts.md#pages-get-apiv1posts), or `null` when it has no such link. Fails when a Link
 * header is there but its next target is not an absolute URL.
 */
export function nextLinkOf(reply: Reply): URL | null {
  const header = reply.headers.get("link");
  if (header === null) return null;
  for (const link of header.split(/,(?=\s*<)/)) {
    const match = /^\s*<([^>]*)>\s*;(.*)$/.exec(link);
    if (match === null || !/(^|;)\s*rel\s*=\s*"?next"?\s*(;|$)/i.test(match[2] ?? "")) continue;
    const target = match[1] ?? "";
    expectThat(URL.canParse(target), `${reply.request}: Link`, 'an absolute URL with rel="next"', header);
    return new URL(target);
  }
  return null;
}
