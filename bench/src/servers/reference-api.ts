/**
 * What the two reference servers the service is measured against (baseline-server.ts, the
 * fastest honest Fastify + `pg` code, and express-server.ts, what most teams write) share so
 * that both answer exactly what the service answers: the SQL and its results, the wire format
 * of a post, the input checks and the messages. How each runs them is its own.
 *
 * Every statement comes with a name that always means the same text, for the server that
 * prepares its statements by name; the other sends `text` and `values` only.
 */
import { partitionOf } from "@posts/adapters-postgres";
import { decodeCursor, encodeCursor, parseId } from "@posts/domain";

export const NOT_FOUND = "게시글을 찾을 수 없습니다.";
export const NOT_AUTHOR = "게시글 작성자만 수정할 수 있습니다.";
export const INVALID_TOKEN = "인증 토큰이 유효하지 않습니다.";
export const UNKNOWN_USER = "사용자를 찾을 수 없습니다.";
export const BAD_CREDENTIALS = "이메일 또는 비밀번호가 올바르지 않습니다.";

/** A statement with its values, as `pg` takes it; without a name it runs unnamed, planned for its values. */
export interface Statement {
  readonly name?: string;
  readonly text: string;
  readonly values: unknown[];
}

/** A post as the statements select it. */
export interface PostRow {
  id: number;
  title: string;
  content: string;
  created_at: Date;
  updated_at: Date;
  user_id: number;
  email: string;
}

/** What the modifying statement answers: the owner, and the post's new state when it changed. */
export type PatchRow = { owner_id: number } & { [K in keyof PostRow]: PostRow[K] | null };

/** `yyyy-MM-ddTHH:mm:ss.SSS` in UTC, the service's default APP_TIME_ZONE. */
const localDateTime = (d: Date) => d.toISOString().slice(0, 23);

/** A post on the wire. */
export const toWire = (r: PostRow) => ({
  id: r.id,
  title: r.title,
  content: r.content,
  createdAt: localDateTime(r.created_at),
  updatedAt: localDateTime(r.updated_at),
  user: { id: r.user_id, email: r.email },
});

/** The body of a 400 or 403, as the service writes it. */
export const errorBody = (status: number, error: string, url: string) => ({
  timestamp: localDateTime(new Date()),
  status,
  error,
  path: url.split("?")[0],
});

/** A title or content the service accepts: non-blank text without NUL or lone surrogates. */
export const isText = (v: unknown): v is string =>
  typeof v === "string" && v.trim() !== "" && !v.includes("\u0000") && v.isWellFormed();
export const isTitle = (v: unknown): v is string => isText(v) && [...v].length <= 255;

/**
 * A post by id, from `posts`, or from the partition that holds the id when `partitions` (each
 * `posts_p<k>` that exists, by k) has it: PostgreSQL 15 plans a statement of a partitioned table
 * afresh at each execution (pruning runs at planning), which costs a lone lookup more than the
 * lookup itself, and the service reads the partition for that reason; the baseline, the limit of
 * the stack, does too.
 */
export function postById(id: number, partitions?: ReadonlySet<number>): Statement {
  const k = partitionOf(id);
  const direct = partitions?.has(k) === true;
  return {
    name: direct ? `post_by_id_p${k}` : "post_by_id",
    text:
      "select p.id, p.title, p.content, p.created_at, p.updated_at, p.user_id, u.email " +
      `from ${direct ? `posts_p${k}` : "posts"} p join users u on u.id = p.user_id where p.id = $1`,
    values: [id],
  };
}

/** The author's email as a scalar subquery, not a join: one users_pkey lookup per row of the page. */
const PAGE_COLUMNS =
  "p.id, p.title, p.content, p.created_at, p.updated_at, p.user_id, " +
  "(select u.email from users u where u.id = p.user_id) as email";
const pageText = (before: boolean, byUser: boolean, searching: boolean) => {
  const where: string[] = [];
  const next = () => `$${where.length + 2}`;
  if (before) where.push(`p.id < ${next()}`);
  if (byUser) where.push(`p.user_id = ${next()}`);
  if (searching) {
    const pattern = next();
    // In "C", as the trigram indexes are built and as the service matches.
    where.push(
      `(p.title COLLATE "C" ILIKE ${pattern} ESCAPE '\\' OR p.content COLLATE "C" ILIKE ${pattern} ESCAPE '\\')`,
    );
  }
  return (
    `select ${PAGE_COLUMNS} from posts p${where.length > 0 ? ` where ${where.join(" and ")}` : ""} ` +
    "order by p.id desc limit $1"
  );
};
const PAGE_TEXTS = {
  page: pageText(false, false, false),
  page_before: pageText(true, false, false),
  page_user: pageText(false, true, false),
  page_user_before: pageText(true, true, false),
};

/** The ILIKE pattern of "contains `search`", its wildcards matching themselves, as the service writes it. */
const containsPattern = (search: string) => `%${search.replace(/[\\%_]/g, "\\$&")}%`;

/**
 * `limit` posts below `before` (all when undefined), of `userId` (everyone's when undefined),
 * containing `search` in the title or content (every post when undefined). A search runs
 * unnamed, as the service runs it: a named statement may fall back to a generic plan, one plan
 * for every term, where a term in every post wants a walk of the primary key and a rare one the
 * trigram indexes.
 */
export function page(
  limit: number,
  before: number | undefined,
  userId: number | undefined,
  search?: string,
): Statement {
  const values: unknown[] = [limit];
  if (before !== undefined) values.push(before);
  if (userId !== undefined) values.push(userId);
  if (search !== undefined) {
    values.push(containsPattern(search));
    return { text: pageText(before !== undefined, userId !== undefined, true), values };
  }
  const name = `page${userId === undefined ? "" : "_user"}${before === undefined ? "" : "_before"}` as const;
  return { name, text: PAGE_TEXTS[name], values };
}

/** The next page's cursor and `link` query, when `rows` (fetched with one extra) go on past `size`. */
export function nextPage(
  rows: readonly PostRow[],
  size: number,
  userId: number | undefined,
  search?: string,
) {
  const content = rows.length > size ? rows.slice(0, size) : rows;
  const last = content.at(-1);
  if (rows.length <= size || last === undefined) return { content, nextCursor: null, linkQuery: undefined };
  const nextCursor = encodeCursor(last.id);
  const query = new URLSearchParams({ size: String(size), cursor: nextCursor });
  if (userId !== undefined) query.set("userId", String(userId));
  if (search !== undefined) query.set("q", search);
  return { content, nextCursor, linkQuery: query.toString() };
}

/** The listing's query parameters as a client sends them. */
export interface PageParameters {
  readonly size?: string;
  readonly cursor?: string;
  readonly userId?: string;
  readonly q?: string;
}

/**
 * The listing's parameters checked as the service checks them (size 1 to 100, default 20; a
 * cursor and a user id that parse; a search it accepts, the empty one meaning none), or
 * undefined where the service answers 400.
 */
export function pageQuery(q: PageParameters) {
  const size = q.size === undefined ? 20 : Number(q.size);
  const before = q.cursor === undefined ? undefined : decodeCursor(q.cursor);
  const userId = q.userId === undefined ? undefined : parseId(q.userId);
  if (
    !Number.isInteger(size) ||
    size < 1 ||
    size > 100 ||
    (q.cursor !== undefined && before === undefined) ||
    (q.userId !== undefined && userId === undefined) ||
    (q.q !== undefined && !isSearch(q.q))
  ) {
    return undefined;
  }
  return { size, before, userId, search: q.q === "" ? undefined : q.q };
}

/** A search text the service accepts: at most 200 code points, no U+0000, no lone surrogate. */
export const isSearch = (v: unknown): v is string =>
  typeof v === "string" && !v.includes("\u0000") && v.isWellFormed() && [...v].length <= 200;

/** Inserts a post by `userId` if that user exists (no row otherwise), answering it with the email. */
export function createPost(title: string, content: string, userId: number): Statement {
  return {
    name: "create_post",
    text: `with author as (select id, email from users where id = $4),
     inserted as (
       insert into posts (title, content, created_at, updated_at, user_id)
       select $1::text, $2::text, $3::timestamptz, $3::timestamptz, author.id from author
       returning id, title, content, created_at, updated_at, user_id)
     select inserted.id, inserted.title, inserted.content, inserted.created_at, inserted.updated_at,
            author.id as user_id, author.email
     from inserted join author on author.id = inserted.user_id`,
    values: [title, content, new Date().toISOString(), userId],
  };
}

const patchText = (title: boolean, content: boolean) => {
  const sets = [
    ...(title ? ["title = $4::text"] : []),
    ...(content ? [`content = $${title ? 5 : 4}::text`] : []),
    "updated_at = greatest($3::timestamptz, p.updated_at + interval '1 millisecond')",
  ];
  // One round trip tells "updated", "someone else's" and "none".
  return `with target as (select id, user_id from posts where id = $1),
       updated as (
         update posts as p set ${sets.join(", ")} from target
         where p.id = target.id and target.user_id = $2
         returning p.id, p.title, p.content, p.created_at, p.updated_at, p.user_id)
       select target.user_id as owner_id, updated.id, updated.title, updated.content,
              updated.created_at, updated.updated_at, users.id as user_id, users.email
       from target left join updated on true left join users on users.id = updated.user_id`;
};
const PATCH_TEXTS = {
  patch_title: patchText(true, false),
  patch_content: patchText(false, true),
  patch_both: patchText(true, true),
};

/** Changes the given fields of post `id` if `userId` wrote it; at least one field is given. */
export function patchPost(
  id: number,
  userId: number,
  title: string | undefined,
  content: string | undefined,
): Statement {
  const name = title === undefined ? "patch_content" : content === undefined ? "patch_title" : "patch_both";
  const values: unknown[] = [id, userId, new Date().toISOString()];
  if (title !== undefined) values.push(title);
  if (content !== undefined) values.push(content);
  return { name, text: PATCH_TEXTS[name], values };
}

export function userByEmail(email: string): Statement {
  return {
    name: "user_by_email",
    text: "select id, email, password_hash from users where lower(email) = lower($1)",
    values: [email.trim().toLowerCase()],
  };
}
