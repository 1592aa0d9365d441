import * as postgres from "@posts/adapters-postgres";
import { postRepositoryContract, userRepositoryContract } from "@posts/domain/testing/vitest";
import { PostgreSqlContainer, type StartedPostgreSqlContainer } from "@testcontainers/postgresql";
import { getContainerRuntimeClient } from "testcontainers";
import { afterAll, describe } from "vitest";
import { mapRepositories } from "./map-repositories.js";

// Our own adapter, held to the suites the posts service holds its in-memory and PostgreSQL ones to.
postRepositoryContract("Map repositories: PostRepository", async () => mapRepositories());
userRepositoryContract("Map repositories: UserRepository", async () => mapRepositories());

// The posts service's PostgreSQL adapter on a throwaway container, when a container runtime answers.
const runtime = await getContainerRuntimeClient().catch((error: Error) => error);
if (runtime instanceof Error) console.warn(`SKIPPING the PostgreSQL container suites: ${runtime.message}`);

describe.skipIf(runtime instanceof Error)("PostgreSQL in a container", () => {
  let container: Promise<StartedPostgreSqlContainer> | undefined;
  afterAll(async () => (await container)?.stop(), 60_000);
  const open = async () => {
    container ??= new PostgreSqlContainer("postgres:17-alpine").start();
    const url = (await container).getConnectionUri();
    const { db, close } = postgres.createPostgresDatabase({ connectionString: url });
    await postgres.migrateToLatest(db);
    const posts = new postgres.PostgresPostRepository(db);
    return { posts, users: new postgres.PostgresUserRepository(db), close };
  };
  postRepositoryContract("PostgresPostRepository", open, { hookTimeoutMs: 120_000 });
  userRepositoryContract("PostgresUserRepository", open, { hookTimeoutMs: 120_000 });
});
