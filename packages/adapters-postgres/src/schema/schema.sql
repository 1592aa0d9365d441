-- The schema every migration of src/schema/migrations/ makes, for reading; the migrations are
-- what runs. Written by `pnpm schema:snapshot` at the repository's root; a test fails when it
-- and the migrations differ.

CREATE EXTENSION IF NOT EXISTS pg_trgm WITH SCHEMA public;

CREATE FUNCTION public.post_char_pairs(title text, content text) RETURNS text[]
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    AS $$
        SELECT tsvector_to_array(array_to_tsvector(array_remove(
                 string_to_array(regexp_replace(t, '(.)', '\1' || chr(31) || '\1', 'g'), chr(31)), '')))
               || CASE WHEN octet_length(content) > 8192 OR strpos(t, chr(31)) > 0
                       THEN ARRAY['']::text[] ELSE '{}'::text[] END
          FROM (SELECT lower(title COLLATE "C") || lower(left(content, 8192) COLLATE "C") AS t) AS s
      $$;

CREATE FUNCTION public.post_chars(title text, content text) RETURNS text[]
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    AS $$
        SELECT tsvector_to_array(array_to_tsvector(
                 string_to_array(lower(title COLLATE "C") || lower(left(content, 8192) COLLATE "C"), NULL)))
               || CASE WHEN octet_length(content) > 8192 THEN ARRAY['']::text[] ELSE '{}'::text[] END
      $$;

CREATE FUNCTION public.post_events_record_created() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
    BEGIN
      INSERT INTO post_events
        (type, post_id, title, content, created_at, updated_at, author_id, author_email, occurred_at)
      SELECT 'post.created', n.id, n.title, n.content, n.created_at, n.updated_at, n.user_id,
             users.email, n.updated_at
      FROM created n LEFT JOIN users ON users.id = n.user_id
      ORDER BY n.id;
      RETURN NULL;
    END
    $$;

CREATE FUNCTION public.post_events_record_deleted() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
        BEGIN
          INSERT INTO post_events (type, post_id, author_id, occurred_at)
          SELECT 'post.deleted', o.id, o.user_id, clock_timestamp() FROM deleted o ORDER BY o.id;
          RETURN NULL;
        END
        $$;

CREATE FUNCTION public.post_events_record_updated() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
    BEGIN
      INSERT INTO post_events
        (type, post_id, title, content, created_at, updated_at, author_id, author_email, occurred_at)
      SELECT 'post.updated', n.id, n.title, n.content, n.created_at, n.updated_at, n.user_id,
             users.email, n.updated_at
      FROM updated n JOIN before_update o ON o.id = n.id AND o.* IS DISTINCT FROM n.* LEFT JOIN users ON users.id = n.user_id
      ORDER BY n.id;
      RETURN NULL;
    END
    $$;

CREATE FUNCTION public.post_word_pairs(title text, content text) RETURNS text[]
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    AS $$
        SELECT coalesce(tsvector_to_array(array_to_tsvector(array_agg(right(a, 3) || ' ' || left(b, 3)))),
                        '{}'::text[])
               || CASE WHEN octet_length(content) > 8192 THEN ARRAY['']::text[] ELSE '{}'::text[] END
          FROM (VALUES (title), (left(content, 8192))) AS t (x),
               LATERAL (SELECT array_remove(string_to_array(lower(x COLLATE "C"), ' '), '') AS w) AS words,
               LATERAL unnest(w[1:cardinality(w) - 1], w[2:]) AS pair (a, b)
      $$;

CREATE FUNCTION public.posts_partition_ids_left() RETURNS bigint
    LANGUAGE sql
    AS $_$
        SELECT coalesce((SELECT max(substr(c.relname, 8)::bigint) + 1
                           FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
                          WHERE i.inhparent = 'posts'::regclass AND c.relname ~ '^posts_p[0-9]+$'), 0) * 131072
               - (SELECT CASE WHEN is_called THEN last_value ELSE last_value - 1 END FROM posts_id_seq)
      $_$;

CREATE FUNCTION public.posts_partitions_ahead(ahead integer) RETURNS integer
    LANGUAGE plpgsql
    AS $$
      DECLARE
        span constant bigint := 131072;
        next_id bigint;
        existing text[];
        made integer := 0;
        caller_lock_timeout constant text := current_setting('lock_timeout');
      BEGIN
        PERFORM pg_advisory_xact_lock(8101821198648635489);
        PERFORM set_config('lock_timeout', '1s', true);
        SELECT CASE WHEN is_called THEN last_value + 1 ELSE last_value END INTO next_id FROM posts_id_seq;
        SELECT coalesce(array_agg(c.relname::text), '{}') INTO existing
          FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
         WHERE i.inhparent = 'posts'::regclass;
        FOR k IN 0 .. (next_id - 1 + ahead * span) / span LOOP
          CONTINUE WHEN 'posts_p' || k = ANY (existing);
          EXECUTE format('CREATE TABLE %I (LIKE posts)', 'posts_p' || k);
          EXECUTE format('ALTER TABLE posts ATTACH PARTITION %I FOR VALUES FROM (%s) TO (%s)',
                         'posts_p' || k, k * span + 1, (k + 1) * span + 1);
          made := made + 1;
        END LOOP;
        PERFORM set_config('lock_timeout', caller_lock_timeout, true);
        RETURN made;
      END
      $$;

CREATE TABLE public.attempt_counts (
    key text NOT NULL,
    count integer NOT NULL,
    reset_at timestamp with time zone NOT NULL
);

CREATE TABLE public.idempotency_keys (
    user_id bigint NOT NULL,
    key character varying(255) NOT NULL,
    post_id bigint,
    fingerprint bytea,
    expires_at timestamp with time zone NOT NULL
);

CREATE TABLE public.post_events (
    seq bigint NOT NULL,
    number bigint,
    numbered_at timestamp with time zone,
    type text NOT NULL,
    post_id bigint NOT NULL,
    title text,
    content text,
    created_at timestamp with time zone,
    updated_at timestamp with time zone,
    author_id bigint NOT NULL,
    author_email text,
    occurred_at timestamp with time zone NOT NULL,
    xid xid8 DEFAULT pg_current_xact_id(),
    xact_start timestamp with time zone DEFAULT now(),
    CONSTRAINT post_events_type_check CHECK ((type = ANY (ARRAY['post.created'::text, 'post.updated'::text, 'post.deleted'::text])))
);

ALTER TABLE public.post_events ALTER COLUMN seq ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.post_events_seq_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE public.posts (
    id bigint NOT NULL,
    title character varying(255) NOT NULL,
    content text NOT NULL,
    created_at timestamp with time zone NOT NULL,
    updated_at timestamp with time zone NOT NULL,
    user_id bigint NOT NULL
)
PARTITION BY RANGE (id);

ALTER TABLE public.posts ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.posts_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE public.posts_p0 (
    id bigint NOT NULL,
    title character varying(255) NOT NULL,
    content text NOT NULL,
    created_at timestamp with time zone NOT NULL,
    updated_at timestamp with time zone NOT NULL,
    user_id bigint NOT NULL
);

CREATE TABLE public.posts_p1 (
    id bigint NOT NULL,
    title character varying(255) NOT NULL,
    content text NOT NULL,
    created_at timestamp with time zone NOT NULL,
    updated_at timestamp with time zone NOT NULL,
    user_id bigint NOT NULL
);

CREATE TABLE public.posts_p2 (
    id bigint NOT NULL,
    title character varying(255) NOT NULL,
    content text NOT NULL,
    created_at timestamp with time zone NOT NULL,
    updated_at timestamp with time zone NOT NULL,
    user_id bigint NOT NULL
);

CREATE TABLE public.users (
    id bigint NOT NULL,
    email text NOT NULL,
    password_hash text NOT NULL,
    created_at timestamp with time zone NOT NULL
);

ALTER TABLE public.users ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.users_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

ALTER TABLE ONLY public.posts ATTACH PARTITION public.posts_p0 FOR VALUES FROM ('1') TO ('131073');

ALTER TABLE ONLY public.posts ATTACH PARTITION public.posts_p1 FOR VALUES FROM ('131073') TO ('262145');

ALTER TABLE ONLY public.posts ATTACH PARTITION public.posts_p2 FOR VALUES FROM ('262145') TO ('393217');

ALTER TABLE ONLY public.attempt_counts
    ADD CONSTRAINT attempt_counts_pkey PRIMARY KEY (key);

ALTER TABLE ONLY public.idempotency_keys
    ADD CONSTRAINT idempotency_keys_pkey PRIMARY KEY (user_id, key);

ALTER TABLE ONLY public.post_events
    ADD CONSTRAINT post_events_pkey PRIMARY KEY (seq);

ALTER TABLE ONLY public.posts
    ADD CONSTRAINT posts_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.posts_p0
    ADD CONSTRAINT posts_p0_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.posts_p1
    ADD CONSTRAINT posts_p1_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.posts_p2
    ADD CONSTRAINT posts_p2_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.users
    ADD CONSTRAINT users_pkey PRIMARY KEY (id);

CREATE INDEX attempt_counts_reset_at_idx ON public.attempt_counts USING btree (reset_at);

CREATE INDEX idempotency_keys_expires_at_idx ON public.idempotency_keys USING btree (expires_at);

CREATE UNIQUE INDEX post_events_number_idx ON public.post_events USING btree (number) WHERE (number IS NOT NULL);

CREATE INDEX post_events_pending_idx ON public.post_events USING btree (xid) WHERE (number IS NULL);

CREATE INDEX posts_char_pairs_idx ON ONLY public.posts USING gin (public.post_char_pairs((title)::text, content));

CREATE INDEX posts_chars_idx ON ONLY public.posts USING gin (public.post_chars((title)::text, content));

CREATE INDEX posts_content_trgm_idx ON ONLY public.posts USING gin (content COLLATE "C" public.gin_trgm_ops);

CREATE INDEX posts_p0_content_idx ON public.posts_p0 USING gin (content COLLATE "C" public.gin_trgm_ops);

CREATE INDEX posts_p0_post_char_pairs_idx ON public.posts_p0 USING gin (public.post_char_pairs((title)::text, content));

CREATE INDEX posts_p0_post_chars_idx ON public.posts_p0 USING gin (public.post_chars((title)::text, content));

CREATE INDEX posts_word_pairs_idx ON ONLY public.posts USING gin (public.post_word_pairs((title)::text, content));

CREATE INDEX posts_p0_post_word_pairs_idx ON public.posts_p0 USING gin (public.post_word_pairs((title)::text, content));

CREATE INDEX posts_title_trgm_idx ON ONLY public.posts USING gin (title COLLATE "C" public.gin_trgm_ops);

CREATE INDEX posts_p0_title_idx ON public.posts_p0 USING gin (title COLLATE "C" public.gin_trgm_ops);

CREATE INDEX posts_user_id_id_idx ON ONLY public.posts USING btree (user_id, id DESC) INCLUDE (updated_at);

CREATE INDEX posts_p0_user_id_id_updated_at_idx ON public.posts_p0 USING btree (user_id, id DESC) INCLUDE (updated_at);

CREATE INDEX posts_p1_content_idx ON public.posts_p1 USING gin (content COLLATE "C" public.gin_trgm_ops);

CREATE INDEX posts_p1_post_char_pairs_idx ON public.posts_p1 USING gin (public.post_char_pairs((title)::text, content));

CREATE INDEX posts_p1_post_chars_idx ON public.posts_p1 USING gin (public.post_chars((title)::text, content));

CREATE INDEX posts_p1_post_word_pairs_idx ON public.posts_p1 USING gin (public.post_word_pairs((title)::text, content));

CREATE INDEX posts_p1_title_idx ON public.posts_p1 USING gin (title COLLATE "C" public.gin_trgm_ops);

CREATE INDEX posts_p1_user_id_id_updated_at_idx ON public.posts_p1 USING btree (user_id, id DESC) INCLUDE (updated_at);

CREATE INDEX posts_p2_content_idx ON public.posts_p2 USING gin (content COLLATE "C" public.gin_trgm_ops);

CREATE INDEX posts_p2_post_char_pairs_idx ON public.posts_p2 USING gin (public.post_char_pairs((title)::text, content));

CREATE INDEX posts_p2_post_chars_idx ON public.posts_p2 USING gin (public.post_chars((title)::text, content));

CREATE INDEX posts_p2_post_word_pairs_idx ON public.posts_p2 USING gin (public.post_word_pairs((title)::text, content));

CREATE INDEX posts_p2_title_idx ON public.posts_p2 USING gin (title COLLATE "C" public.gin_trgm_ops);

CREATE INDEX posts_p2_user_id_id_updated_at_idx ON public.posts_p2 USING btree (user_id, id DESC) INCLUDE (updated_at);

CREATE UNIQUE INDEX users_email_lower_key ON public.users USING btree (lower(email));

ALTER INDEX public.posts_content_trgm_idx ATTACH PARTITION public.posts_p0_content_idx;

ALTER INDEX public.posts_pkey ATTACH PARTITION public.posts_p0_pkey;

ALTER INDEX public.posts_char_pairs_idx ATTACH PARTITION public.posts_p0_post_char_pairs_idx;

ALTER INDEX public.posts_chars_idx ATTACH PARTITION public.posts_p0_post_chars_idx;

ALTER INDEX public.posts_word_pairs_idx ATTACH PARTITION public.posts_p0_post_word_pairs_idx;

ALTER INDEX public.posts_title_trgm_idx ATTACH PARTITION public.posts_p0_title_idx;

ALTER INDEX public.posts_user_id_id_idx ATTACH PARTITION public.posts_p0_user_id_id_updated_at_idx;

ALTER INDEX public.posts_content_trgm_idx ATTACH PARTITION public.posts_p1_content_idx;

ALTER INDEX public.posts_pkey ATTACH PARTITION public.posts_p1_pkey;

ALTER INDEX public.posts_char_pairs_idx ATTACH PARTITION public.posts_p1_post_char_pairs_idx;

ALTER INDEX public.posts_chars_idx ATTACH PARTITION public.posts_p1_post_chars_idx;

ALTER INDEX public.posts_word_pairs_idx ATTACH PARTITION public.posts_p1_post_word_pairs_idx;

ALTER INDEX public.posts_title_trgm_idx ATTACH PARTITION public.posts_p1_title_idx;

ALTER INDEX public.posts_user_id_id_idx ATTACH PARTITION public.posts_p1_user_id_id_updated_at_idx;

ALTER INDEX public.posts_content_trgm_idx ATTACH PARTITION public.posts_p2_content_idx;

ALTER INDEX public.posts_pkey ATTACH PARTITION public.posts_p2_pkey;

ALTER INDEX public.posts_char_pairs_idx ATTACH PARTITION public.posts_p2_post_char_pairs_idx;

ALTER INDEX public.posts_chars_idx ATTACH PARTITION public.posts_p2_post_chars_idx;

ALTER INDEX public.posts_word_pairs_idx ATTACH PARTITION public.posts_p2_post_word_pairs_idx;

ALTER INDEX public.posts_title_trgm_idx ATTACH PARTITION public.posts_p2_title_idx;

ALTER INDEX public.posts_user_id_id_idx ATTACH PARTITION public.posts_p2_user_id_id_updated_at_idx;

CREATE TRIGGER posts_record_created AFTER INSERT ON public.posts REFERENCING NEW TABLE AS created FOR EACH STATEMENT EXECUTE FUNCTION public.post_events_record_created();

CREATE TRIGGER posts_record_deleted AFTER DELETE ON public.posts REFERENCING OLD TABLE AS deleted FOR EACH STATEMENT EXECUTE FUNCTION public.post_events_record_deleted();

CREATE TRIGGER posts_record_updated AFTER UPDATE ON public.posts REFERENCING OLD TABLE AS before_update NEW TABLE AS updated FOR EACH STATEMENT EXECUTE FUNCTION public.post_events_record_updated();

ALTER TABLE ONLY public.idempotency_keys
    ADD CONSTRAINT idempotency_keys_user_id_fkey FOREIGN KEY (user_id) REFERENCES public.users(id) ON DELETE CASCADE;

ALTER TABLE public.posts
    ADD CONSTRAINT posts_user_id_fkey FOREIGN KEY (user_id) REFERENCES public.users(id) ON DELETE CASCADE;
