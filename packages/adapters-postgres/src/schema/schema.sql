-- The schema every migration of src/schema/migrations/ makes, for reading; the migrations are
-- what runs. Written by `pnpm schema:snapshot` at the repository's root; a test fails when it
-- and the migrations differ.

CREATE EXTENSION IF NOT EXISTS pg_trgm WITH SCHEMA public;

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
);

ALTER TABLE public.posts ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.posts_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
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

ALTER TABLE ONLY public.attempt_counts
    ADD CONSTRAINT attempt_counts_pkey PRIMARY KEY (key);

ALTER TABLE ONLY public.idempotency_keys
    ADD CONSTRAINT idempotency_keys_pkey PRIMARY KEY (user_id, key);

ALTER TABLE ONLY public.post_events
    ADD CONSTRAINT post_events_pkey PRIMARY KEY (seq);

ALTER TABLE ONLY public.posts
    ADD CONSTRAINT posts_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.users
    ADD CONSTRAINT users_pkey PRIMARY KEY (id);

CREATE INDEX attempt_counts_reset_at_idx ON public.attempt_counts USING btree (reset_at);

CREATE INDEX idempotency_keys_expires_at_idx ON public.idempotency_keys USING btree (expires_at);

CREATE UNIQUE INDEX post_events_number_idx ON public.post_events USING btree (number) WHERE (number IS NOT NULL);

CREATE INDEX post_events_pending_idx ON public.post_events USING btree (xid) WHERE (number IS NULL);

CREATE INDEX posts_content_trgm_idx ON public.posts USING gin (content public.gin_trgm_ops);

CREATE INDEX posts_title_trgm_idx ON public.posts USING gin (title public.gin_trgm_ops);

CREATE INDEX posts_user_id_id_idx ON public.posts USING btree (user_id, id DESC) INCLUDE (updated_at);

CREATE UNIQUE INDEX users_email_lower_key ON public.users USING btree (lower(email));

CREATE TRIGGER posts_record_created AFTER INSERT ON public.posts REFERENCING NEW TABLE AS created FOR EACH STATEMENT EXECUTE FUNCTION public.post_events_record_created();

CREATE TRIGGER posts_record_deleted AFTER DELETE ON public.posts REFERENCING OLD TABLE AS deleted FOR EACH STATEMENT EXECUTE FUNCTION public.post_events_record_deleted();

CREATE TRIGGER posts_record_updated AFTER UPDATE ON public.posts REFERENCING OLD TABLE AS before_update NEW TABLE AS updated FOR EACH STATEMENT EXECUTE FUNCTION public.post_events_record_updated();

ALTER TABLE ONLY public.idempotency_keys
    ADD CONSTRAINT idempotency_keys_user_id_fkey FOREIGN KEY (user_id) REFERENCES public.users(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.posts
    ADD CONSTRAINT posts_user_id_fkey FOREIGN KEY (user_id) REFERENCES public.users(id) ON DELETE CASCADE;
