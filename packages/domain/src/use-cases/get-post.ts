import type { DomainErrorOf } from "../errors.js";
import { parseId } from "../ids.js";
import type { ReadPost } from "../post.js";
import { err, ok, type Result } from "../result.js";
import type { Dependencies } from "./dependencies.js";

/**
 * Reads one post; open to everyone. A post whose content is large may come as an outline
 * (`PostRepository.findById`), for the caller to read whole when it has room. An id that cannot name a post (beyond 64 bits, zero)
 * is "post-not-found" without asking the repository.
 */
export async function getPost(
  deps: Pick<Dependencies, "posts">,
  postId: string,
): Promise<Result<ReadPost, DomainErrorOf<"post-not-found">>> {
  const id = parseId(postId);
  const post = id === undefined ? undefined : await deps.posts.findById(id);
  return post === undefined ? err({ kind: "post-not-found" }) : ok(post);
}
