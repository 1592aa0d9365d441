import type { Dependencies } from "../use-cases/dependencies.js";
import { FakePasswordHasher } from "./fake-password-hasher.js";
import { FakeTokenIssuer } from "./fake-token-issuer.js";
import { InMemoryDatabase } from "./in-memory-database.js";
import { ManualClock } from "./manual-clock.js";

/** Every port wired to an in-memory or fake adapter, with the fakes exposed for assertions. */
export interface InMemoryDependencies extends Dependencies {
  readonly database: InMemoryDatabase;
  readonly clock: ManualClock;
  readonly hasher: FakePasswordHasher;
  readonly tokens: FakeTokenIssuer;
}

/** A fresh, empty set of in-memory dependencies. */
export function inMemoryDependencies(): InMemoryDependencies {
  const database = new InMemoryDatabase();
  return {
    database,
    posts: database.posts,
    users: database.users,
    clock: new ManualClock(),
    hasher: new FakePasswordHasher(),
    tokens: new FakeTokenIssuer(),
  };
}
