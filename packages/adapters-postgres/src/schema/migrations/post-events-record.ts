import { sql } from "kysely";
import type { AnyDatabase } from "./any-database.js";

/**
 * (Re)defines the function the triggers on `posts` call: one outbox row per changed post. 0006
 * made it notify `post_events` at each change; 0007 made it stop (see there), and its `down` puts
 * the notification back. One text for all three, so that they cannot drift apart.
 */
export async function recordPostEvents(db: AnyDatabase, { notifyEachChange }: { notifyEachChange: boolean }) {
  const notify = notifyEachChange ? sql.raw("PERFORM pg_notify('post_events', '');") : sql.raw("");
  await sql`
    CREATE OR REPLACE FUNCTION post_events_record() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_OP = 'DELETE' THEN
        INSERT INTO post_events (type, post_id, author_id, occurred_at)
        VALUES ('post.deleted', OLD.id, OLD.user_id, clock_timestamp());
      ELSE
        INSERT INTO post_events
          (type, post_id, title, content, created_at, updated_at, author_id, author_email, occurred_at)
        VALUES (
          CASE TG_OP WHEN 'INSERT' THEN 'post.created' ELSE 'post.updated' END,
          NEW.id, NEW.title, NEW.content, NEW.created_at, NEW.updated_at, NEW.user_id,
          (SELECT email FROM users WHERE id = NEW.user_id), NEW.updated_at
        );
      END IF;
      ${notify}
      RETURN NULL;
    END
    $$`.execute(db);
}

/** Creates the row triggers of 0006 that call `post_events_record()`; 0009 replaced them, and its `down` puts them back. */
export async function createRowTriggers(db: AnyDatabase) {
  await sql`
    CREATE TRIGGER posts_record_insert_delete AFTER INSERT OR DELETE ON posts
    FOR EACH ROW EXECUTE FUNCTION post_events_record()`.execute(db);
  // An update that changes nothing is no change.
  await sql`
    CREATE TRIGGER posts_record_update AFTER UPDATE ON posts
    FOR EACH ROW WHEN (OLD.* IS DISTINCT FROM NEW.*) EXECUTE FUNCTION post_events_record()`.execute(db);
}
