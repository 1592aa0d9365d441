import { acquirePostgresContainer, containerRuntimeAnswers } from "@posts/adapters-postgres/testing";
import * as contracts from "@posts/domain/testing/vitest";
import { describe } from "vitest";
import { mapRepositories } from "./map-repositories.js";
import { pgAttemptCounter } from "./pg-attempt-counter.js";

// Our own adapters, held to the suites the posts service holds its in-memory and PostgreSQL ones to.
contracts.postRepositoryContract("Map repositories: PostRepository", async () => mapRepositories());
contracts.userRepositoryContract("Map repositories: UserRepository", async () => mapRepositories());

// Our own SQL on a throwaway PostgreSQL container: the fixture starts it for the suite and stops it
// after (the image is POSTS_TEST_POSTGRES_IMAGE, else the official postgres image).
const runtime = await containerRuntimeAnswers();
if (!runtime) console.warn("SKIPPING the PostgreSQL container suite: no container runtime answers");
describe.skipIf(!runtime)("on a PostgreSQL container", () => {
  const open = async () => {
    const server = await acquirePostgresContainer();
    const { counter, close } = await pgAttemptCounter(server.url);
    return { counter, close: () => close().then(server.release) };
  };
  contracts.attemptCounterContract("pgAttemptCounter", open, { hookTimeoutMs: 120_000 });
});
