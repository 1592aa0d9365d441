import { type Migration, sql } from "kysely";
import type { AnyDatabase } from "./any-database.js";

/** `0013_post_word_pairs`, as recorded in `kysely_migration`. */
export const postWordPairs: Migration = {
  async up(db: AnyDatabase) {
    // Which words of a post follow which, for the search of a term of several words. The
    // trigram indexes take the trigrams of each word apart: a term whose every word is in every
    // post (`amet dolor` where the posts say `dolor sit amet`) has every post of a partition as
    // a candidate, and each is read and matched to find none. A GIN index of this array finds the
    // posts where the term's words follow each other (`@>`), and the search's ILIKE then checks
    // them.
    //
    // A post's words are its runs of characters other than the space, in the title and in the
    // content's first 8192 characters apart, lower-cased in "C" (ASCII letters only, as the
    // search's `COLLATE "C" ILIKE` folds case); for each word and the next, the element is the
    // word's last three characters, a space and the next word's first three (`met dol`). A post
    // that holds the term holds each of the term's pairs whose two sides the term shows: a side
    // is known when the term shows three characters of it or the whole word (see the adapter's
    // `wordPairsOf`). Only a prefix of the content is read, as for post_chars, and a content that
    // may hold more than was read adds the element '', which makes the post a candidate of every
    // term. array_to_tsvector keeps each element once with a byte comparison (see
    // 0012_post_chars_each_once); a tsvector cannot hold '', so that mark is added after. The
    // words are paired by unnesting two slices of their array side by side: a subscript of an
    // array of text walks it from its start, so pairing by subscripts cost a post of a few
    // hundred words ten times as much.
    await sql`
      CREATE FUNCTION post_word_pairs(title text, content text) RETURNS text[]
      LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
        SELECT coalesce(tsvector_to_array(array_to_tsvector(array_agg(right(a, 3) || ' ' || left(b, 3)))),
                        '{}'::text[])
               || CASE WHEN octet_length(content) > 8192 THEN ARRAY['']::text[] ELSE '{}'::text[] END
          FROM (VALUES (title), (left(content, 8192))) AS t (x),
               LATERAL (SELECT array_remove(string_to_array(lower(x COLLATE "C"), ' '), '') AS w) AS words,
               LATERAL unnest(w[1:cardinality(w) - 1], w[2:]) AS pair (a, b)
      $$`.execute(db);
    // The build reads every post: about a minute a million posts of a few hundred bytes on two
    // cores, during which the posts' writes wait (see migrateToLatest).
    await sql`CREATE INDEX posts_word_pairs_idx ON posts USING gin (post_word_pairs(title, content))`.execute(
      db,
    );
  },

  async down(db: AnyDatabase) {
    await sql`DROP INDEX posts_word_pairs_idx`.execute(db);
    await sql`DROP FUNCTION post_word_pairs(text, text)`.execute(db);
  },
};
