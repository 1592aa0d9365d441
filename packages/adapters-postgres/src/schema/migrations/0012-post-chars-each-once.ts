import { type Migration, sql } from "kysely";
import type { AnyDatabase } from "./any-database.js";

/** `0012_post_chars_each_once`, as recorded in `kysely_migration`. */
export const postCharsEachOnce: Migration = {
  async up(db: AnyDatabase) {
    // post_chars lists each character once. It listed every character of a post, several
    // hundred for a post of a few hundred characters, and GIN sorts the elements of each value
    // it indexes to drop the repeated ones: with text comparisons in the database's collation
    // (strcoll), that sort cost about 50 µs a post on every write and most of an index build
    // (7 s for 131,072 posts of 320 bytes). array_to_tsvector drops the repeats with a byte
    // comparison, and GIN then sorts a few dozen elements: an index build takes less than half as
    // long. A tsvector cannot hold '', so the mark of a content longer than what was read is
    // added after.
    //
    // The index is not built again: GIN keeps each element of an array once, so its keys for
    // every post are the same whichever way the function lists them, and what the search asks
    // (@>, which GIN answers from its keys) answers the same.
    await sql`
      CREATE OR REPLACE FUNCTION post_chars(title text, content text) RETURNS text[]
      LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
        SELECT tsvector_to_array(array_to_tsvector(
                 string_to_array(lower(title COLLATE "C") || lower(left(content, 8192) COLLATE "C"), NULL)))
               || CASE WHEN octet_length(content) > 8192 THEN ARRAY['']::text[] ELSE '{}'::text[] END
      $$`.execute(db);
  },

  async down(db: AnyDatabase) {
    await sql`
      CREATE OR REPLACE FUNCTION post_chars(title text, content text) RETURNS text[]
      LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
        SELECT string_to_array(lower(title COLLATE "C") || lower(left(content, 8192) COLLATE "C"), NULL)
               || CASE WHEN octet_length(content) > 8192 THEN ARRAY['']::text[] ELSE '{}'::text[] END
      $$`.execute(db);
  },
};
