import { randomBytes } from "node:crypto";
import type { ApiClient, Reply, RequestOptions } from "../http/api-client.js";
import { expectStatus, expectThat, jsonOf, objectOf } from "./expectations.js";
import { expectPageReply, type PostJson, postIdOfLocation } from "./wire-shapes.js";

/** A user this run registered, with a token from a real login. */
export interface TestUser {
  readonly id: number;
  readonly email: string;
  readonly password: string;
  readonly token: string;
}

/** Paths of the contract. */
export const POSTS = "/api/v1/posts";
export const USER = "/api/v1/user";
export const LOGIN = "/api/v1/user/login";

/** Digits that name no post on any deployment: beyond every 64-bit id. */
export const MISSING_POST_ID = "99999999999999999999";

/**
 * The data one run makes on the deployment, and its removal. Every email is new to the
 * deployment (a random run id in it), every post belongs to a user of this run, and the
 * deployment's other data is never assumed absent: cases filter by their own `userId` and
 * search for terms made by {@link Fixture.term}. Registrations and logins here always succeed,
 * so they count toward no throttle.
 */
export class Fixture {
  readonly #api: ApiClient;
  readonly #runId = randomBytes(4).toString("hex");
  readonly #alive = new Map<string, TestUser>();
  readonly #shared = new Map<string, Promise<TestUser>>();
  #count = 0;

  constructor(api: ApiClient) {
    this.#api = api;
  }

  /** An email address no one has registered: this run's id, a counter and a label. */
  email(label: string): string {
    this.#count += 1;
    return `posts-conformance-${this.#runId}-${this.#count}-${label}@example.com`;
  }

  /** A password of 24 random characters. */
  password(): string {
    return `pw-${randomBytes(12).toString("base64url")}`;
  }

  /** A word of ASCII letters and digits found in no data but this run's (for searches). */
  term(label: string): string {
    this.#count += 1;
    return `zq${this.#runId}${label}${this.#count}x${randomBytes(3).toString("hex")}`;
  }

  /** Registers a new user and logs in; the user is deleted at cleanup unless a case deleted it. */
  register(label: string): Promise<TestUser> {
    return this.registerWith(this.email(label), this.password());
  }

  /** Registers `email` (201 expected), logs in, and keeps the user for cleanup. */
  async registerWith(email: string, password: string): Promise<TestUser> {
    const registered = await this.#api.post(USER, { json: { email, password } });
    expectStatus(registered, 201);
    return this.adopt(registered, password);
  }

  /** Logs in the user a case registered itself (`registered` is its 201) and keeps it for cleanup. */
  async adopt(registered: Reply, password: string): Promise<TestUser> {
    const body = objectOf(jsonOf(registered), `${registered.request}: body`);
    const email = body.email as string;
    const token = await this.logIn(email, password);
    const user = { id: body.id as number, email, password, token };
    this.#alive.set(email, user);
    return user;
  }

  /** Logs in with a correct password and answers the token. */
  async logIn(email: string, password: string): Promise<string> {
    const reply = await this.#api.post(LOGIN, { json: { email, password } });
    expectStatus(reply, 200);
    const token = objectOf(jsonOf(reply), `${reply.request}: body`).token;
    expectThat(typeof token === "string", `${reply.request}: token`, "a string", token);
    return token as string;
  }

  /** One user per name, registered once per run and shared by the cases that only read with it. */
  shared(name: string): Promise<TestUser> {
    let user = this.#shared.get(name);
    if (user === undefined) {
      user = this.register(name);
      this.#shared.set(name, user);
      // A failed registration is reported by the case that asked; the next one tries again.
      user.catch(() => this.#shared.delete(name));
    }
    return user;
  }

  /** Creates a post as `user` (201 expected) and answers its id. */
  async createPost(
    user: TestUser,
    fields: { readonly title?: string; readonly content?: string } = {},
    options: RequestOptions = {},
  ): Promise<number> {
    const reply = await this.#api.post(POSTS, {
      ...options,
      token: user.token,
      json: { title: fields.title ?? "conformance title", content: fields.content ?? "conformance content" },
    });
    expectStatus(reply, 201);
    return postIdOfLocation(reply);
  }

  /** Every post of `user`, newest first, walking the pages of 100. */
  async postsOf(user: { readonly id: number }): Promise<PostJson[]> {
    const posts: PostJson[] = [];
    let path = `${POSTS}?userId=${user.id}&size=100`;
    for (;;) {
      const page = expectPageReply(await this.#api.get(path));
      posts.push(...page.content);
      if (page.nextCursor === null) return posts;
      path = `${POSTS}?userId=${user.id}&size=100&cursor=${encodeURIComponent(page.nextCursor)}`;
    }
  }

  /** Notes that a case deleted `user` itself: cleanup leaves it alone. */
  forget(user: TestUser): void {
    this.#alive.delete(user.email);
  }

  /**
   * Deletes every user of this run still alive (their posts and idempotency keys go with them).
   * Answers a line for each user it could not delete.
   */
  async cleanup(): Promise<string[]> {
    const problems: string[] = [];
    for (const user of this.#alive.values()) {
      try {
        const reply = await this.#api.delete(USER, { token: user.token });
        if (reply.status !== 204) problems.push(`${user.email}: DELETE ${USER} answered ${reply.status}`);
      } catch (error) {
        problems.push(`${user.email}: ${(error as Error).message}`);
      }
    }
    this.#alive.clear();
    return problems;
  }
}
