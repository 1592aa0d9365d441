-- Candidate (c): a RUM index ordered by id within each lexeme. Lexemes: pg_trgm's trigrams of
-- the title and the content (show_trgm: words, ASCII and other letters folded by the database's
-- locale) and every character of them, ASCII letters folded ("C" lower), so that a term of one
-- or two characters is found from the index too. RUM's `attach`/`to` take table columns only, so
-- the lexemes are a stored generated column.
\set ON_ERROR_STOP on
create extension if not exists rum;
create extension if not exists pg_trgm;
create or replace function post_grams(title text, content text) returns tsvector
language sql immutable strict parallel safe as $$
  select array_to_tsvector(show_trgm(title) || show_trgm(content)
                           || string_to_array(lower(title collate "C") || lower(content collate "C"), null))
$$;
-- The lexemes every match of a term holds: the trigrams inside its words (show_trgm of a
-- three-character window of word characters, less those it pads with spaces: what the window
-- shares with the same window between two other word characters), else its characters.
create or replace function term_grams(term text) returns tsquery
language sql immutable strict parallel safe as $$
  with w as (
    select substr(term, i, 3) w from generate_series(1, length(term) - 2) i
     where substr(term, i, 3) ~ '^[[:alnum:]]{3}$'),
  inner_trigrams as (
    select t from w, lateral (
      select unnest(show_trgm(w)) intersect
      select unnest(show_trgm(c || w || c))
        from (select min(c) c from unnest(array['7', '8', '9']) c
               where c not in (lower(left(w, 1)), lower(right(w, 1)))) d) x(t)),
  lexemes as (
    select t from inner_trigrams
    union
    select c from unnest(string_to_array(lower(term collate "C"), null)) c
     where not exists (select from inner_trigrams))
  select string_agg('''' || replace(replace(t, '\', '\\'), '''', '''''') || '''', ' & ')::tsquery from lexemes
$$;
alter table posts add column grams tsvector generated always as (post_grams(title, content)) stored;
set maintenance_work_mem = '512MB';
create index posts_grams_rum_idx on posts using rum (grams rum_tsvector_addon_ops, id)
  with (attach = 'id', to = 'grams', order_by_attach = 't');
vacuum analyze posts;
