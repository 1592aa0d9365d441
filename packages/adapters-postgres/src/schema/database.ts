import type { ColumnType, Generated, GeneratedAlways } from "kysely";

/**
 * A `timestamptz` column: read as a `Date` (the instant), written as an ISO 8601 string with
 * its offset, so that what is stored never depends on the process or session time zone.
 */
export type Timestamp = ColumnType<Date, string, string>;

/** The `users` table. */
export interface UsersTable {
  readonly id: GeneratedAlways<number>;
  /** Unique case-insensitively (unique index on `lower(email)`). */
  email: string;
  password_hash: string;
  created_at: Timestamp;
}

/** The `posts` table. A post goes when its author goes (`on delete cascade`). */
export interface PostsTable {
  readonly id: GeneratedAlways<number>;
  /** `varchar(255)`: at most 255 code points. */
  title: string;
  content: string;
  created_at: Timestamp;
  updated_at: Timestamp;
  user_id: number;
}

/**
 * The `attempt_counts` table: one fixed window of attempts per key (`AttemptCounter`), shared by
 * every instance. A row whose `reset_at` has passed counts as absent until the sweep deletes it.
 */
export interface AttemptCountsTable {
  key: string;
  count: number;
  reset_at: Timestamp;
}

/**
 * The `idempotency_keys` table: one row per key a user created a post under, primary key
 * `(user_id, key)`. Goes with its user (`on delete cascade`), not with its post.
 */
export interface IdempotencyKeysTable {
  user_id: number;
  /** `varchar(255)`. */
  key: string;
  /** The post the key made; null only inside the transaction that makes it. */
  post_id: number | null;
  /** SHA-256 of the title and content the key was used with; null as `post_id` is. */
  fingerprint: Uint8Array | null;
  /** When the key is forgotten. */
  expires_at: Timestamp;
}

/**
 * The `post_events` table: the outbox of change events, one row per change of a post, written
 * by a trigger on `posts` in the change's transaction and numbered after commit.
 */
export interface PostEventsTable {
  /** Insertion order; never shown. */
  readonly seq: GeneratedAlways<number>;
  /**
   * The transaction that wrote the row (`pg_current_xact_id()`, a 64-bit id, as a string): where
   * the sequencer's scan of the rows still to number starts. Null on rows numbered before it
   * was recorded (migration 0008).
   */
  readonly xid: Generated<string | null>;
  /**
   * When that transaction started (`now()`): with `xid`, what tells the write's own row from one
   * of another transaction given the same id after a failover (`poolForKysely`). Null on rows
   * written before it was recorded (migration 0010).
   */
  readonly xact_start: Generated<Timestamp | null>;
  /** The public event number; null until the sequencer has given it. */
  number: number | null;
  /** When the sequencer gave the number (the database's clock); retention counts from it. */
  numbered_at: Timestamp | null;
  type: "post.created" | "post.updated" | "post.deleted";
  post_id: number;
  /** The post after the change; null for a deletion. */
  title: string | null;
  content: string | null;
  created_at: Timestamp | null;
  updated_at: Timestamp | null;
  author_id: number;
  /** Null for a deletion. */
  author_email: string | null;
  occurred_at: Timestamp;
}

/** The schema as Kysely sees it, after every migration has run. */
export interface Database {
  users: UsersTable;
  posts: PostsTable;
  attempt_counts: AttemptCountsTable;
  idempotency_keys: IdempotencyKeysTable;
  post_events: PostEventsTable;
}
