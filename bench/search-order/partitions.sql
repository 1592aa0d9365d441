-- Candidate (b'): posts partitioned by ranges of :span ids (psql -v span=131072 -v posts=1000000),
-- the last partition open-ended, each with its own trigram indexes in the "C" collation and an
-- index of its posts' characters (as chars.sql), the author index and the change-event triggers
-- as the migrations make them. Run on a copy of the seeded database without its trigram indexes.
\set ON_ERROR_STOP on
set maintenance_work_mem = '512MB';
create or replace function post_chars(title text, content text) returns text[]
language sql immutable strict parallel safe as $$
  select string_to_array(lower(title collate "C") || lower(content collate "C"), null)
$$;
alter table posts rename to posts_unpartitioned;
create table posts (
  id bigint generated always as identity,
  title varchar(255) not null,
  content text not null,
  created_at timestamptz not null,
  updated_at timestamptz not null,
  user_id bigint not null references users (id) on delete cascade,
  primary key (id)
) partition by range (id);
select format('create table posts_%s partition of posts for values from (%s) to (%s)',
              r, r * :span + 1,
              case when (r + 1) * :span < :posts then ((r + 1) * :span + 1)::text else 'maxvalue' end)
  from generate_series(0, (:posts - 1) / :span) r
\gexec
alter table posts disable trigger user;
insert into posts overriding system value select * from posts_unpartitioned;
select setval(pg_get_serial_sequence('posts', 'id'), (select max(id) from posts));
drop table posts_unpartitioned cascade;
create index posts_user_id_id_idx on posts (user_id, id desc) include (updated_at);
create index posts_title_trgm_idx on posts using gin (title collate "C" gin_trgm_ops);
create index posts_content_trgm_idx on posts using gin (content collate "C" gin_trgm_ops);
create index posts_chars_idx on posts using gin (post_chars(title, content));
create trigger posts_record_created after insert on posts referencing new table as created
  for each statement execute function post_events_record_created();
create trigger posts_record_deleted after delete on posts referencing old table as deleted
  for each statement execute function post_events_record_deleted();
create trigger posts_record_updated after update on posts referencing old table as before_update
  new table as updated for each statement execute function post_events_record_updated();
vacuum analyze posts;
