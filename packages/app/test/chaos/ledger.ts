import type { CloudEvent, PostJson } from "../support/wire-json.js";

/**
 * What a client knows of one write it sent: answered with success (`acknowledged`), answered
 * with a refusal (`refused`: it must have made no event), or never answered (`unknown`: the
 * connection died with its instance, so it may or may not have happened).
 */
export type Outcome = "acknowledged" | "refused" | "unknown";

/** One write aimed at one post, in the order its only writer sent them. */
export type Attempt =
  | { readonly kind: "create"; readonly title: string; readonly content: string; outcome: Outcome }
  | {
      readonly kind: "update";
      readonly title?: string;
      readonly content?: string;
      outcome: Outcome;
      /** The post the 200 answered with: the event must carry exactly it. */
      post?: PostJson;
    }
  | { readonly kind: "delete"; outcome: Outcome }
  /** The post went with its author's account (DELETE /api/v1/user answered 204). */
  | { readonly kind: "cascade"; outcome: Outcome };

/** Every write the clients sent, by post, and the creations whose post id they never learned. */
export class Ledger {
  readonly byPost = new Map<number, Attempt[]>();
  /** Creations never answered, by their (unique) title. */
  readonly unknownCreations = new Map<string, Attempt>();
  writes = 0;
  refused = 0;
  unknown = 0;

  add(postId: number, attempt: Attempt): void {
    const attempts = this.byPost.get(postId) ?? [];
    attempts.push(attempt);
    this.byPost.set(postId, attempts);
  }
}

/**
 * Checks one post's events against what its writer did, in order: each acknowledged write has
 * exactly its event, in the order the writes were answered; a refused one has none; an unknown
 * one has its event or none. Answers the problems found (empty when all is well).
 */
export function matchPost(
  postId: number,
  attempts: readonly Attempt[],
  events: readonly CloudEvent[],
): string[] {
  const problems: string[] = [];
  let next = 0;
  for (const attempt of attempts) {
    if (attempt.outcome === "refused") continue;
    const event = events[next];
    const matches = event !== undefined && eventMatches(attempt, event);
    if (matches) next++;
    else if (attempt.outcome === "acknowledged") {
      problems.push(
        `post ${postId}: acknowledged ${attempt.kind} ${JSON.stringify(attempt)} has no event ` +
          `(next event: ${JSON.stringify(event)})`,
      );
    }
  }
  for (const extra of events.slice(next)) {
    problems.push(`post ${postId}: event ${extra.id} (${extra.type}) matches no write that was sent`);
  }
  return problems;
}

function eventMatches(attempt: Attempt, event: CloudEvent): boolean {
  switch (attempt.kind) {
    case "create":
      return (
        event.type === "post.created" &&
        event.data.title === attempt.title &&
        event.data.content === attempt.content
      );
    case "update":
      if (event.type !== "post.updated") return false;
      if (attempt.post !== undefined) return JSON.stringify(event.data) === JSON.stringify(attempt.post);
      return (
        (attempt.title === undefined || event.data.title === attempt.title) &&
        (attempt.content === undefined || event.data.content === attempt.content)
      );
    case "delete":
    case "cascade":
      return event.type === "post.deleted";
  }
}
