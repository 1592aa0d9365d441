import { hash } from "node:crypto";
import {
  type CreatedPost,
  err,
  type IdempotencyKey,
  type IdempotentCreateFailure,
  type NewPost,
  ok,
  type Result,
} from "@posts/domain";
import { type Kysely, type RawBuilder, sql } from "kysely";
import { type PreparedStatement, prepare } from "../../connection/prepare.js";
import {
  SQLSTATE_FOREIGN_KEY_VIOLATION,
  SQLSTATE_UNIQUE_VIOLATION,
  sqlStateOf,
} from "../../connection/sql-state.js";
import { parseInt8 } from "../../connection/type-parsers.js";
import { writeEvidence } from "../../connection/write-evidence.js";
import type { Database } from "../../schema/database.js";
import { type NewPostColumns, newPostColumns } from "./plain-creation.js";
import { writesTogether } from "./writes-together.js";

interface KeyedCreateValues {
  readonly authorId: number;
  readonly title: string;
  readonly content: string;
  readonly createdAt: string;
  readonly key: string;
  readonly fingerprint: Buffer;
  readonly expiresAt: string;
  readonly now: string;
}

/**
 * What an idempotent creation learns in its one statement: the post it made, or else the post
 * the key (remembered and unexpired when the statement began) made before and whether its text
 * is the same; and whether the author exists.
 */
interface KeyedCreateRow {
  readonly created_id: number | null;
  readonly existing_id: number | null;
  readonly same_text: boolean | null;
  readonly author_exists: boolean;
}

/** Several idempotent creations with keys never used, in the order asked; fingerprints in hex. */
interface NewKeysValues extends NewPostColumns {
  readonly keys: readonly string[];
  readonly fingerprints: readonly string[];
  readonly expiresAts: readonly string[];
}

interface RememberedKeyValues {
  readonly authorId: number;
  readonly key: string;
  readonly fingerprint: Uint8Array;
  readonly now: string;
}

/** A key this author used before and still remembered: the post it made, and whether the text is the same. */
interface RememberedKeyRow {
  readonly post_id: number;
  readonly same_text: boolean;
}

/**
 * How often an idempotent creation reads its key again after a concurrent request of the same key
 * committed it (a second statement each time), before giving up: only a key that expires or is
 * forgotten in the very moments between two statements needs a second round.
 */
const KEYED_CREATE_ROUNDS = 3;

/** How many expired idempotency keys one statement of a sweep deletes at most. */
const SWEEP_BATCH = 5000;

/**
 * The fingerprint an idempotency key keeps of the text it was used with: SHA-256 over the title's
 * length in bytes (4 bytes, big-endian), the title and the content, all as UTF-8, so no two
 * different (title, content) pairs hash the same input. Stored instead of a second copy of a
 * content of up to 16 MiB, and identical on every instance. The same bytes as PostgreSQL's
 * `sha256(int4send(octet_length(title)) || …)`, so a key hashed either way compares equal; hashed
 * here because the database's CPU is the scarcer one.
 */
function idempotencyFingerprint(title: string, content: string): Buffer {
  const titleLength = Buffer.byteLength(title, "utf8");
  const input = Buffer.allocUnsafe(4 + titleLength + Buffer.byteLength(content, "utf8"));
  input.writeUInt32BE(titleLength, 0);
  input.write(title, 4, "utf8");
  input.write(content, 4 + titleLength, "utf8");
  // One call without a Hash object: the cheaper way for short texts.
  return hash("sha256", input, "buffer");
}

/**
 * Inserts the post of an idempotent creation under the id its key claimed, from the CTE
 * `claimed` (`user_id`, `post_id`): nothing when the claim made no row.
 */
function insertClaimedPost(p: KeyedCreateValues): RawBuilder<unknown> {
  return sql`
    INSERT INTO posts (id, title, content, created_at, updated_at, user_id) OVERRIDING SYSTEM VALUE
    SELECT claimed.post_id, ${p.title}::text, ${p.content}::text,
           ${p.createdAt}::timestamptz, ${p.createdAt}::timestamptz, claimed.user_id
    FROM claimed
    RETURNING id`;
}

/**
 * Creates posts under idempotency keys, and forgets expired keys. Every statement runs on the
 * primary and outside any transaction (a taken key fails a statement, which would abort an
 * enclosing one); none may be answered by a standby, since each decides a write. The created
 * post's change event needs nothing here: the posts table's trigger writes it in the creating
 * statement's own transaction, so a post and its event commit together or not at all.
 */
export class IdempotentCreation {
  readonly #createWithNewKey: PreparedStatement<KeyedCreateValues, { readonly created_id: number }>;
  readonly #createWithNewKeys: PreparedStatement<
    NewKeysValues,
    { readonly ord: number; readonly created_id: number }
  >;
  readonly #createNew: (values: KeyedCreateValues) => Promise<number>;
  readonly #createWithKey: PreparedStatement<KeyedCreateValues, KeyedCreateRow>;
  readonly #rememberedKey: PreparedStatement<RememberedKeyValues, RememberedKeyRow>;
  readonly #deleteExpiredKeys: PreparedStatement<
    { now: string; batch: number },
    { readonly forgotten: number }
  >;

  constructor(db: Kysely<Database>) {
    // The common case, a key never used: the key and the post in one statement, two plain
    // inserts. A key its author used before (or is using in a concurrent request) fails it on the
    // primary key, a gone author on a foreign key, and nothing of it stays; only then does the
    // general statement below run. It spares PostgreSQL the speculative insertion of ON CONFLICT,
    // the author's lookup and the second look at the key. A replay costs an
    // error (which PostgreSQL logs) and one statement more; replays are retries, and rare. The
    // error would abort an enclosing transaction: these statements run outside any.
    this.#createWithNewKey = prepare(db, (p: KeyedCreateValues) =>
      sql<{ created_id: number }>`
        WITH claimed AS (
          INSERT INTO idempotency_keys (user_id, key, expires_at, post_id, fingerprint)
          VALUES (${p.authorId}, ${p.key}::text, ${p.expiresAt}::timestamptz,
                  nextval(pg_get_serial_sequence('posts', 'id')), ${p.fingerprint}::bytea)
          RETURNING user_id, post_id
        ), inserted AS (
          ${insertClaimedPost(p)}
        )
        SELECT id AS created_id, ${writeEvidence(sql`id`)} FROM inserted`.compile(db),
    );
    // The same for the creations asked in one turn of the event loop, as PlainCreation does
    // without keys: one taken key or gone
    // author fails the whole statement, nothing of it stays, and each creation is tried again
    // alone (writesTogether), where it fails as it would have alone. The ids are drawn in the
    // order asked. The keys are inserted in one order, whatever order they were asked in, so
    // that two statements claiming some of the same keys (retries sent to two instances at once)
    // wait for each other instead of deadlocking.
    this.#createWithNewKeys = prepare(db, (p: NewKeysValues) =>
      sql<{ ord: number; created_id: number }>`
        WITH asked AS MATERIALIZED (
          SELECT nextval(pg_get_serial_sequence('posts', 'id')) AS post_id, i.*
          FROM (
            SELECT *
            FROM unnest(${p.authorIds}::int8[], ${p.titles}::text[], ${p.contents}::text[],
                        ${p.createdAts}::timestamptz[], ${p.keys}::text[], ${p.fingerprints}::text[],
                        ${p.expiresAts}::timestamptz[])
              WITH ORDINALITY AS i(author_id, title, content, created_at, key, fingerprint, expires_at, ord)
            ORDER BY i.ord
          ) AS i
        ), claimed AS (
          INSERT INTO idempotency_keys (user_id, key, expires_at, post_id, fingerprint)
          SELECT author_id, key, expires_at, post_id, decode(fingerprint, 'hex')
          FROM asked ORDER BY author_id, key
        ), inserted AS (
          INSERT INTO posts (id, title, content, created_at, updated_at, user_id) OVERRIDING SYSTEM VALUE
          SELECT post_id, title, content, created_at, created_at, author_id FROM asked ORDER BY ord
          RETURNING id
        )
        SELECT asked.ord, inserted.id AS created_id, ${writeEvidence(sql`inserted.id`)}
        FROM inserted JOIN asked ON asked.post_id = inserted.id`.compile(db),
    );
    this.#createNew = writesTogether<KeyedCreateValues, number>({
      alone: async (values) => {
        const [created] = await this.#createWithNewKey(values);
        if (created === undefined) throw new Error("an idempotent creation answered no row");
        return parseInt8(created.created_id);
      },
      together: (asked) => this.#createManyWithNewKeys(asked),
      contentOf: (values) => values.content,
    });

    // One statement, atomic on its own: the key is claimed (inserted, or an expired use of it
    // taken over) together with the post's id drawn from the posts' sequence, and the post is
    // inserted under that id only if the claim succeeded. A claim of a key another statement has
    // just inserted waits on the primary key until that one ends, then takes it over if it rolled
    // back, or answers no row if it committed: the key's row as this statement's snapshot saw it
    // then tells nothing about that one, and a second statement reads it (see createIdempotently).
    // The key's earlier use is looked up only when nothing was created (a gating condition on the
    // outcome), so a first use, the common case, reads the key's index once. A gone author claims
    // and inserts nothing (nothing to select the claim from).
    this.#createWithKey = prepare(db, (p: KeyedCreateValues) =>
      sql<KeyedCreateRow>`
        WITH author AS (
          SELECT id FROM users WHERE id = ${p.authorId}
        ), claimed AS (
          INSERT INTO idempotency_keys (user_id, key, expires_at, post_id, fingerprint)
          SELECT author.id, ${p.key}::text, ${p.expiresAt}::timestamptz,
                 nextval(pg_get_serial_sequence('posts', 'id')), ${p.fingerprint}::bytea
          FROM author
          ON CONFLICT (user_id, key) DO UPDATE
            SET post_id = excluded.post_id, fingerprint = excluded.fingerprint, expires_at = excluded.expires_at
            WHERE idempotency_keys.expires_at <= ${p.now}::timestamptz
          RETURNING user_id, post_id
        ), inserted AS (
          ${insertClaimedPost(p)}
        )
        SELECT made.id AS created_id,
               k.post_id AS existing_id,
               k.same_text,
               EXISTS (SELECT 1 FROM author) AS author_exists,
               ${writeEvidence(sql`made.id`)}
        FROM (SELECT (SELECT id FROM inserted) AS id) AS made
        LEFT JOIN LATERAL (
          SELECT post_id, fingerprint = ${p.fingerprint}::bytea AS same_text
          FROM idempotency_keys
          WHERE made.id IS NULL
            AND user_id = ${p.authorId} AND key = ${p.key}::text AND expires_at > ${p.now}::timestamptz
        ) AS k ON true`.compile(db),
    );

    this.#rememberedKey = prepare(db, (p: RememberedKeyValues) =>
      sql<RememberedKeyRow>`
        SELECT post_id, fingerprint = ${p.fingerprint}::bytea AS same_text
        FROM idempotency_keys
        WHERE user_id = ${p.authorId} AND key = ${p.key}::text AND expires_at > ${p.now}::timestamptz`.compile(
        db,
      ),
    );

    // In batches, so that no statement of a long-overdue sweep runs into the statement timeout;
    // rows locked by a creation taking an expired key over are skipped, as are those another
    // instance's sweep is deleting.
    this.#deleteExpiredKeys = prepare(db, (p: { now: string; batch: number }) =>
      sql<{ forgotten: number }>`
        WITH forgotten AS (
          DELETE FROM idempotency_keys
          WHERE (user_id, key) IN (
            SELECT user_id, key FROM idempotency_keys WHERE expires_at <= ${p.now}::timestamptz
            LIMIT ${p.batch} FOR UPDATE SKIP LOCKED
          )
          RETURNING 1
        )
        SELECT count(*)::int4 AS forgotten FROM forgotten`.compile(db),
    );
  }

  /** `PostRepository.createIdempotently`. */
  async create(post: NewPost, key: IdempotencyKey): Promise<Result<CreatedPost, IdempotentCreateFailure>> {
    const now = post.createdAt.toISOString();
    const fingerprint = idempotencyFingerprint(post.title, post.content);
    // Spelled out, not spread: a literal of one shape is built in one step, a spread is not.
    const values: KeyedCreateValues = {
      authorId: post.authorId,
      title: post.title,
      content: post.content,
      createdAt: now,
      key: key.key,
      fingerprint,
      expiresAt: key.expiresAt.toISOString(),
      now,
    };
    try {
      try {
        return ok({ id: await this.#createNew(values), replayed: false });
      } catch (error) {
        // The key is taken, or was until the statement ended: the general statement decides.
        if (!isKeyTaken(error)) throw error;
      }
      for (let round = 1; ; round++) {
        const [row] = await this.#createWithKey(values);
        if (row === undefined) throw new Error("an idempotent creation answered no row");
        if (row.created_id !== null) return ok({ id: parseInt8(row.created_id), replayed: false });
        if (!row.author_exists) return err("author-gone");
        if (row.existing_id !== null) return replayOrRefuse(row.existing_id, row.same_text === true);
        // The key was committed by a concurrent request after this statement began: a new
        // statement sees it.
        const [again] = await this.#rememberedKey({
          authorId: post.authorId,
          key: key.key,
          fingerprint,
          now,
        });
        if (again !== undefined) return replayOrRefuse(again.post_id, again.same_text);
        // Gone again already (expired, or its author deleted): claim it afresh.
        if (round === KEYED_CREATE_ROUNDS)
          throw new Error("an idempotency key kept changing under its creation");
      }
    } catch (error) {
      // The author was deleted after the statement read the users table.
      if (sqlStateOf(error) === SQLSTATE_FOREIGN_KEY_VIOLATION) return err("author-gone");
      throw error;
    }
  }

  async #createManyWithNewKeys(asked: readonly KeyedCreateValues[]): Promise<(number | Error)[]> {
    const rows = await this.#createWithNewKeys({
      ...newPostColumns(asked),
      keys: asked.map((values) => values.key),
      fingerprints: asked.map((values) => values.fingerprint.toString("hex")),
      expiresAts: asked.map((values) => values.expiresAt),
    });
    const ids: (number | undefined)[] = asked.map(() => undefined);
    for (const row of rows) ids[parseInt8(row.ord) - 1] = parseInt8(row.created_id);
    // The statement creates every post or fails as a whole: a missing answer would be a bug.
    return ids.map((id) => id ?? new Error("an idempotent creation answered no row"));
  }

  /** `PostRepository.deleteExpiredIdempotencyKeys`: in batches of at most `SWEEP_BATCH` keys a statement. */
  async forgetExpired(now: Date): Promise<number> {
    let total = 0;
    for (;;) {
      const [row] = await this.#deleteExpiredKeys({ now: now.toISOString(), batch: SWEEP_BATCH });
      const forgotten = row?.forgotten ?? 0;
      total += forgotten;
      if (forgotten < SWEEP_BATCH) return total;
    }
  }
}

/** The answer of a key used before: its post again when the text is the same, else "key-reused". */
function replayOrRefuse(postId: number, sameText: boolean): Result<CreatedPost, IdempotentCreateFailure> {
  return sameText ? ok({ id: parseInt8(postId), replayed: true }) : err("key-reused");
}

/** Whether a statement failed because the idempotency key it inserted exists already. */
function isKeyTaken(error: unknown): boolean {
  return (
    sqlStateOf(error) === SQLSTATE_UNIQUE_VIOLATION &&
    (error as { constraint?: unknown }).constraint === "idempotency_keys_pkey"
  );
}
