import { type Migration, sql } from "kysely";
import type { AnyDatabase } from "./any-database.js";

/** `0014_post_char_pairs`, as recorded in `kysely_migration`. */
export const postCharPairs: Migration = {
  async up(db: AnyDatabase) {
    // Which pairs of consecutive characters a post holds, for the search of a term of two
    // characters or more from which pg_trgm extracts no trigram (`4 `, `zz`, `a.`): the index of
    // the posts' characters (post_chars) answers such a term with every post that holds its
    // characters, which for common characters is every post, each then read and matched. A GIN
    // index of this array finds the posts that hold each pair of the term (`@>`), and the
    // search's ILIKE then checks them.
    //
    // The text is read as post_chars reads it: the title then the content's first 8192
    // characters, lower-cased in "C" (ASCII letters only, as the search's `COLLATE "C" ILIKE`
    // folds case), one after the other (the pair across them is one no term needs, and costs
    // nothing). The pairs come from C functions rather than a loop in SQL, which cost as much
    // again: each character is written twice around a unit separator (U+001F), `abc` as
    // `a␟ab␟bc␟c`, and the text split at the separators holds every pair, and the first and
    // last characters alone. A text that holds the separator itself is split wrongly there, so
    // it adds the element '', as does a content longer than what was read: either makes the
    // post a candidate of every term. array_to_tsvector keeps each element once with a byte
    // comparison (see 0012_post_chars_each_once); a tsvector cannot hold '', so the empty
    // pieces are removed before it and the mark added after.
    await sql`
      CREATE FUNCTION post_char_pairs(title text, content text) RETURNS text[]
      LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
        SELECT tsvector_to_array(array_to_tsvector(array_remove(
                 string_to_array(regexp_replace(t, '(.)', '\\1' || chr(31) || '\\1', 'g'), chr(31)), '')))
               || CASE WHEN octet_length(content) > 8192 OR strpos(t, chr(31)) > 0
                       THEN ARRAY['']::text[] ELSE '{}'::text[] END
          FROM (SELECT lower(title COLLATE "C") || lower(left(content, 8192) COLLATE "C") AS t) AS s
      $$`.execute(db);
    // The build computes the pairs of every post: about three minutes a million posts of a few
    // hundred bytes on two cores, during which the posts' writes wait (see migrateToLatest).
    await sql`CREATE INDEX posts_char_pairs_idx ON posts USING gin (post_char_pairs(title, content))`.execute(
      db,
    );
  },

  async down(db: AnyDatabase) {
    await sql`DROP INDEX posts_char_pairs_idx`.execute(db);
    await sql`DROP FUNCTION post_char_pairs(text, text)`.execute(db);
  },
};
