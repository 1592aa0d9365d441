-- Candidate (b): the trigram indexes split by ranges of ids, as partial GIN indexes of
-- :span ids each (psql -v span=131072 -v posts=1000000), the newest range open-ended so that
-- new posts go to it; the whole-table trigram indexes dropped. With -v coll='COLLATE "C"' the
-- indexes are in the "C" collation, so that the search's own condition (ILIKE in "C", which
-- folds ASCII letters only) is the index's: each candidate is then checked by one ILIKE a
-- column instead of one in the database's collation (several times slower) and one in "C".
\set ON_ERROR_STOP on
\if :{?coll}
\else
\set coll ''
\endif
set maintenance_work_mem = '512MB';
drop index if exists posts_title_trgm_idx;
drop index if exists posts_content_trgm_idx;
select format('create index posts_title_trgm_%1$s on posts using gin (title %4$s gin_trgm_ops) where id >= %2$s%3$s;'
              || ' create index posts_content_trgm_%1$s on posts using gin (content %4$s gin_trgm_ops) where id >= %2$s%3$s;',
              r, r * :span + 1,
              case when (r + 1) * :span < :posts then format(' and id < %s', (r + 1) * :span + 1) else '' end,
              :'coll')
  from generate_series(0, (:posts - 1) / :span) r
\gexec
vacuum analyze posts;
