-- An addition to candidate (b) for terms of one or two characters, which have no trigram: each
-- post's distinct characters (ASCII letters folded, as the search folds them), in partial GIN
-- indexes by the same ranges of :span ids (psql -v span=32768 -v posts=1000000). A term's
-- characters must all be among a match's, so a rare character's posts are found from them.
\set ON_ERROR_STOP on
set maintenance_work_mem = '512MB';
create or replace function post_chars(title text, content text) returns text[]
language sql immutable strict parallel safe as $$
  select string_to_array(lower(title collate "C") || lower(content collate "C"), null)
$$;
select format('create index posts_chars_%1$s on posts using gin (post_chars(title, content)) where id >= %2$s%3$s;',
              r, r * :span + 1,
              case when (r + 1) * :span < :posts then format(' and id < %s', (r + 1) * :span + 1) else '' end)
  from generate_series(0, (:posts - 1) / :span) r
\gexec
analyze posts;
