import type { Migration } from "kysely";
import { createUsers } from "./migrations/0001-create-users.js";
import { createPosts } from "./migrations/0002-create-posts.js";
import { createAttemptCounts } from "./migrations/0003-create-attempt-counts.js";
import { conditionalWritesIdempotencySearch } from "./migrations/0004-conditional-writes-idempotency-search.js";
import { authorPagesFromTheIndex } from "./migrations/0005-author-pages-from-the-index.js";
import { postChangeEvents } from "./migrations/0006-post-change-events.js";
import { postEventsWithoutANotificationPerChange } from "./migrations/0007-post-events-without-a-notification-per-change.js";
import { postEventsCheaperToWriteAndToNumber } from "./migrations/0008-post-events-cheaper-to-write-and-to-number.js";
import { postEventsWrittenPerStatement } from "./migrations/0009-post-events-written-per-statement.js";
import { postEventsRecordTheirTransactionsStart } from "./migrations/0010-post-events-record-their-transactions-start.js";
import { postsPartitionedByIdRanges } from "./migrations/0011-posts-partitioned-by-id-ranges.js";
import { postCharsEachOnce } from "./migrations/0012-post-chars-each-once.js";
import { postWordPairs } from "./migrations/0013-post-word-pairs.js";
import { postCharPairs } from "./migrations/0014-post-char-pairs.js";

/**
 * Every schema change, by name; Kysely runs them in name order and records each one in
 * `kysely_migration`. Defined in code rather than read from files, so that they run the same
 * from the sources and from `dist`; each one in a file of its own under `migrations/`, named as it
 * is recorded. Never edit one that has been released: add the next. So each is written out whole
 * in Kysely's schema builder and they share no helper, however alike they look: a change to a
 * shared helper would change what a released migration does.
 */
export const MIGRATIONS: Readonly<Record<string, Migration>> = {
  "0001_create_users": createUsers,
  "0002_create_posts": createPosts,
  "0003_create_attempt_counts": createAttemptCounts,
  "0004_conditional_writes_idempotency_search": conditionalWritesIdempotencySearch,
  "0005_author_pages_from_the_index": authorPagesFromTheIndex,
  "0006_post_change_events": postChangeEvents,
  "0007_post_events_without_a_notification_per_change": postEventsWithoutANotificationPerChange,
  "0008_post_events_cheaper_to_write_and_to_number": postEventsCheaperToWriteAndToNumber,
  "0009_post_events_written_per_statement": postEventsWrittenPerStatement,
  "0010_post_events_record_their_transactions_start": postEventsRecordTheirTransactionsStart,
  "0011_posts_partitioned_by_id_ranges": postsPartitionedByIdRanges,
  "0012_post_chars_each_once": postCharsEachOnce,
  "0013_post_word_pairs": postWordPairs,
  "0014_post_char_pairs": postCharPairs,
};
