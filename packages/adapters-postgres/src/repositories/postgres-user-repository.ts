import { err, type NewUser, ok, type Result, type User, type UserRepository } from "@posts/domain";
import { type Kysely, sql } from "kysely";
import type { RunStatement } from "../connection/direct-statements.js";
import { type PreparedStatement, prepare } from "../connection/prepare.js";
import { SQLSTATE_UNIQUE_VIOLATION, sqlStateOf } from "../connection/sql-state.js";
import type { CurrentPosts } from "../post-cache/current-posts.js";
import { toUser, type UserRow } from "../rows/user-row.js";
import type { Database } from "../schema/database.js";

const USER_COLUMNS = ["id", "email", "password_hash", "created_at"] as const;

interface CreateValues {
  readonly email: string;
  readonly passwordHash: string;
  readonly createdAt: string;
}

/** How a {@link PostgresUserRepository} is set up beyond its database. */
export interface PostgresUserRepositoryOptions {
  /**
   * Where the lookup by email (what login reads) goes, outside any transaction: a hot standby
   * may answer it. Everything else (creation, deletion, the lookup by id) runs on the primary
   * `db`. Absent: the lookup runs on `db` too.
   */
  readonly readStatements?: RunStatement;
  /**
   * Called after a user's deletion committed, which deleted their posts too: the change event
   * log's `wake`, so that those deletions' events are numbered at once.
   */
  readonly onChange?: () => void;
  /**
   * The current posts the post repository answers from, on a database that this process alone
   * writes: a user's deletion, which deletes their posts, forgets them there.
   */
  readonly currentPosts?: CurrentPosts;
}

/**
 * `UserRepository` on PostgreSQL (a server through `pg`, or PGlite). Emails are unique
 * case-insensitively through the unique index on `lower(email)`, whatever the caller
 * normalized. Deleting a user removes their posts in the same statement (`on delete cascade`).
 * Every statement is compiled once, when the repository is made.
 */
export class PostgresUserRepository implements UserRepository {
  readonly #create: PreparedStatement<CreateValues, UserRow>;
  readonly #findByEmail: PreparedStatement<{ email: string }, UserRow>;
  readonly #findById: PreparedStatement<{ id: number }, UserRow>;
  readonly #delete: PreparedStatement<{ id: number }, { readonly id: number }>;
  readonly #onChange: () => void;
  readonly #currentPosts: CurrentPosts | undefined;

  constructor(db: Kysely<Database>, options: PostgresUserRepositoryOptions = {}) {
    this.#onChange = options.onChange ?? (() => {});
    this.#currentPosts = options.currentPosts;
    // A taken email inserts nothing and returns no row, instead of failing the statement.
    this.#create = prepare(db, (p: CreateValues) =>
      db
        .insertInto("users")
        .values({ email: p.email, password_hash: p.passwordHash, created_at: p.createdAt })
        .onConflict((conflict) => conflict.expression(sql`lower(email)`).doNothing())
        .returning(USER_COLUMNS)
        .compile(),
    );
    // Written as the unique index's expression, so that the index answers it.
    this.#findByEmail = prepare(
      db,
      (p: { email: string }) =>
        db
          .selectFrom("users")
          .select(USER_COLUMNS)
          .where(sql`lower(email)`, "=", sql<string>`lower(${p.email})`)
          .compile(),
      { run: options.readStatements },
    );
    this.#findById = prepare(db, (p: { id: number }) =>
      db.selectFrom("users").select(USER_COLUMNS).where("id", "=", p.id).compile(),
    );
    this.#delete = prepare(db, (p: { id: number }) =>
      db.deleteFrom("users").where("id", "=", p.id).returning("id").compile(),
    );
  }

  async create(user: NewUser): Promise<Result<User, "email-taken">> {
    let rows: UserRow[];
    try {
      rows = await this.#create({
        email: user.email,
        passwordHash: user.passwordHash,
        createdAt: user.createdAt.toISOString(),
      });
    } catch (error) {
      // ON CONFLICT covers the conflicts it can see; this covers any other way to the same one.
      // A clash on another key (an id) is no taken email: it propagates.
      if (sqlStateOf(error) === SQLSTATE_UNIQUE_VIOLATION && isEmailIndex(error)) return err("email-taken");
      throw error;
    }
    const [row] = rows;
    return row === undefined ? err("email-taken") : ok(toUser(row));
  }

  async findByEmail(email: string): Promise<User | undefined> {
    const [row] = await this.#findByEmail({ email });
    return row === undefined ? undefined : toUser(row);
  }

  async findById(id: number): Promise<User | undefined> {
    const [row] = await this.#findById({ id });
    return row === undefined ? undefined : toUser(row);
  }

  async delete(id: number): Promise<boolean> {
    // The foreign key's ON DELETE CASCADE removes the user's posts within this statement.
    const current = this.#currentPosts;
    const rows = await (current === undefined
      ? this.#delete({ id })
      : current.writing(() => this.#delete({ id })));
    if (rows.length === 0) return false;
    current?.authorDeleted(id);
    this.#onChange();
    return true;
  }
}

/** Whether a unique violation names the email index (the migration `0001_create_users` made it). */
function isEmailIndex(error: unknown): boolean {
  const constraint = (error as { constraint?: unknown }).constraint;
  // A driver that does not say which constraint failed leaves email as the only plausible one.
  return constraint === undefined || constraint === "users_email_lower_key";
}
