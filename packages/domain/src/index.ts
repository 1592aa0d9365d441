export { decodeCursor, encodeCursor } from "./cursor.js";
export type { DomainError, DomainErrorOf, FieldError } from "./errors.js";
export { IdempotencyKeyMemory } from "./idempotency-key-memory.js";
export { DEFAULT_IDEMPOTENCY_TTL_MS, isValidIdempotencyKey } from "./idempotency-rules.js";
export { parseId } from "./ids.js";
export { MESSAGES } from "./messages.js";
export type { AttemptCount, AttemptCounter } from "./ports/attempt-counter.js";
export type { ChangeEventLog } from "./ports/change-event-log.js";
export type { Clock } from "./ports/clock.js";
export { systemClock } from "./ports/clock.js";
export type { PasswordHasher } from "./ports/password-hasher.js";
export type {
  CreatedPost,
  ExpectedVersions,
  IdempotencyKey,
  IdempotentCreateFailure,
  OwnedWriteFailure,
  PostDeletion,
  PostPageQuery,
  PostRepository,
  PostUpdate,
  SearchPageQuery,
  SearchPageRead,
} from "./ports/post-repository.js";
export type { IssuedToken, TokenClaims, TokenIssuer } from "./ports/token-issuer.js";
export { claimsFor, DEFAULT_TOKEN_LIFETIME_MS } from "./ports/token-issuer.js";
export type { UserRepository } from "./ports/user-repository.js";
export type { Author, NewPost, Post, PostChanges, PostOutline, ReadPost } from "./post.js";
export { isWhole, nextUpdatedAt } from "./post.js";
export type { PostChangeEvent, PostChangeType } from "./post-change-event.js";
export { changeEventTextBytes, POST_CHANGE_TYPES } from "./post-change-event.js";
export type { IdempotencyKeyUse } from "./post-repository-rules.js";
export {
  answerForUsedKey,
  applyOwnedUpdate,
  checkOwnedWrite,
  DEFAULT_SEARCH_BUDGET,
  DEFAULT_SEARCH_BYTES,
  foldAscii,
  matchesPageQuery,
  pageReaders,
  postTextBytes,
  selectPage,
  selectSearchPage,
} from "./post-repository-rules.js";
export type { PostText } from "./post-rules.js";
export {
  checkContent,
  checkTitle,
  codePointLength,
  TITLE_MAX_CODE_POINTS,
  validatePostText,
} from "./post-rules.js";
export type { Principal } from "./principal.js";
export { hasUserRole, ROLE_USER } from "./principal.js";
export type { Result } from "./result.js";
export { err, ok } from "./result.js";
export { canonicalTimeZone } from "./time-zone.js";
export type { CreatePostCommand } from "./use-cases/create-post.js";
export { createPost } from "./use-cases/create-post.js";
export { deleteAccount, deleteMe } from "./use-cases/delete-account.js";
export type { DeletePostCommand } from "./use-cases/delete-post.js";
export { deletePost } from "./use-cases/delete-post.js";
export type { Dependencies } from "./use-cases/dependencies.js";
export { getMe } from "./use-cases/get-me.js";
export { getPost } from "./use-cases/get-post.js";
export type { ListPostsQuery, PostPage } from "./use-cases/list-posts.js";
export {
  DEFAULT_PAGE_SIZE,
  listPosts,
  MAX_PAGE_SIZE,
  SEARCH_MAX_CODE_POINTS,
} from "./use-cases/list-posts.js";
export type { LoginCommand } from "./use-cases/login.js";
export { login } from "./use-cases/login.js";
export type { PatchPostCommand } from "./use-cases/patch-post.js";
export { patchPost } from "./use-cases/patch-post.js";
export { registerUser } from "./use-cases/register-user.js";
export type { NewUser, PublicUser, User } from "./user.js";
export { normalizeEmail, toPublicUser } from "./user.js";
export type { Credentials } from "./user-rules.js";
export {
  EMAIL_MAX_LENGTH,
  isAcceptablePassword,
  PASSWORD_MAX_LENGTH,
  PASSWORD_MIN_LENGTH,
  parseEmail,
  validateCredentials,
} from "./user-rules.js";
