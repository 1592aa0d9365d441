-- Seeds :posts posts (psql -v posts=1000000) in the bench's shape (bench/src/load/database.ts:
-- 'Post number g', six lorem sentences with "ipsum", "quokka" in one title in 10,000, "게시판"
-- in one content in 20, "오래된" in the oldest 0.1 % of titles, "Archived" in the oldest 1 % of
-- contents) plus the clustered terms of the study: words whose matches fill one stretch of
-- ids (old, middle), at 0.01 %, 0.1 %, 1 %, 11 % and 20 % of the posts. Every planted word is
-- one the lorem text cannot hold, so each class's matches are exactly where it says.
\set ON_ERROR_STOP on
set synchronous_commit = off;
alter table posts disable trigger user;
insert into users (id, email, password_hash, created_at) overriding system value
select g, 'user' || g || '@bench.test', 'x', timestamptz '2025-01-01 00:00:00+00'
  from generate_series(1, 1000) g;
insert into posts (id, title, content, created_at, updated_at, user_id) overriding system value
select g,
       'Post number ' || g
         || case when g % 10000 = 5000 then ' quokka' else '' end
         || case when g <= :posts / 1000 then ' 오래된 글' else '' end
         -- old stretches, titles: 20 % (ids 1..20 %), Korean 1 % in the middle
         || case when g <= :posts / 5 then ' sphinx' else '' end
         || case when g > :posts / 2 and g <= :posts / 2 + :posts / 100 then ' 한가운데' else '' end,
       case when g % 20 = 10 then '오늘의 게시판 소식. ' else '' end
         || repeat('Lorem ipsum dolor sit amet, consectetur adipiscing. ', 6) || g
         || case when g <= :posts / 100 then ' Archived.' else '' end
         -- old stretches, contents: 11 % ending at 19 %, 1 %, 0.1 %, 0.01 % at 15 %
         || case when g > :posts * 8 / 100 and g <= :posts * 19 / 100 then ' waltz' else '' end
         || case when g > :posts * 15 / 100 and g <= :posts * 16 / 100 then ' nymph' else '' end
         || case when g > :posts * 15 / 100 and g <= :posts * 15 / 100 + :posts / 1000 then ' glyph' else '' end
         || case when g > :posts * 15 / 100 and g <= :posts * 15 / 100 + :posts / 10000 then ' fjord' else '' end,
       t, t, ((g - 1) % 1000) + 1
  from generate_series(1, :posts) g,
       lateral (select timestamptz '2025-01-02 00:00:00+00' + g * interval '1 second' as t) ts;
alter table posts enable trigger user;
select setval(pg_get_serial_sequence('users', 'id'), 1000);
select setval(pg_get_serial_sequence('posts', 'id'), :posts);
