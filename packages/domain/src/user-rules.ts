import type { DomainErrorOf, FieldError } from "./errors.js";
import { MESSAGES } from "./messages.js";
import { codePointLength } from "./post-rules.js";
import { err, ok, type Result } from "./result.js";
import { normalizeEmail } from "./user.js";

/** Longest stored email, in code points after normalization. */
export const EMAIL_MAX_LENGTH = 255;
/** Password bounds, in code points. */
export const PASSWORD_MIN_LENGTH = 8;
export const PASSWORD_MAX_LENGTH = 128;

// One "@", something on each side, a dot in the domain, no white space or control characters.
// It backtracks quadratically over a domain of many dots, so it only ever sees bounded input.
const EMAIL = /^[^\s@\p{Cc}]+@[^\s@\p{Cc}]+\.[^\s@\p{Cc}]+$/u;

// A code point is at most two UTF-16 units: anything longer is over the limit without counting.
const EMAIL_MAX_UNITS = EMAIL_MAX_LENGTH * 2;
const PASSWORD_MAX_UNITS = PASSWORD_MAX_LENGTH * 2;

/**
 * Checks an email address and answers its normalized form (trimmed, lower-cased), or
 * `undefined` when it is not a string, not an address, or longer than 255 code points
 * once normalized.
 */
export function parseEmail(value: unknown): string | undefined {
  if (typeof value !== "string") return undefined;
  const email = normalizeEmail(value);
  if (email.length > EMAIL_MAX_UNITS || !email.isWellFormed() || !EMAIL.test(email)) return undefined;
  return codePointLength(email) <= EMAIL_MAX_LENGTH ? email : undefined;
}

/**
 * Whether a value is well-formed Unicode text of 8 to 128 code points, the only passwords
 * accepted. A lone surrogate is refused: the hasher reads a password as UTF-8, where every lone
 * surrogate becomes U+FFFD, so two different passwords would verify as one.
 */
export function isAcceptablePassword(value: unknown): value is string {
  if (typeof value !== "string" || value.length < PASSWORD_MIN_LENGTH || value.length > PASSWORD_MAX_UNITS) {
    return false;
  }
  const length = codePointLength(value);
  return length >= PASSWORD_MIN_LENGTH && length <= PASSWORD_MAX_LENGTH && value.isWellFormed();
}

/**
 * The fields of a registration or login given as text that is not well-formed Unicode (a lone
 * surrogate), email first, each with its message; empty when there are none. Such text could
 * only be stored or compared altered, so it is refused as it is in titles.
 */
export function illFormedCredentialFields(email: unknown, password: unknown): FieldError[] {
  const errors: FieldError[] = [];
  if (typeof email === "string" && !email.isWellFormed()) {
    errors.push({ field: "email", message: MESSAGES.emailInvalid });
  }
  if (typeof password === "string" && !password.isWellFormed()) {
    errors.push({ field: "password", message: MESSAGES.passwordInvalidCharacter });
  }
  return errors;
}

/** An email and password that {@link validateCredentials} accepted: the email normalized. */
export interface Credentials {
  readonly email: string;
  readonly password: string;
}

/**
 * Validates registration input: the email an address of at most 255 code points, the password
 * 8 to 128 code points, both well-formed Unicode. Answers the normalized email and the password as given, or a
 * "validation" error listing every failing field, email first.
 */
export function validateCredentials(
  email: unknown,
  password: unknown,
): Result<Credentials, DomainErrorOf<"validation">> {
  const errors: FieldError[] = [];
  const normalized = parseEmail(email);
  if (normalized === undefined) errors.push({ field: "email", message: MESSAGES.emailInvalid });
  const passwordOk = isAcceptablePassword(password);
  if (!passwordOk) {
    const illFormed = typeof password === "string" && !password.isWellFormed();
    errors.push({
      field: "password",
      message: illFormed ? MESSAGES.passwordInvalidCharacter : MESSAGES.passwordInvalid,
    });
  }
  if (normalized === undefined || !passwordOk) return err({ kind: "validation", errors });
  return ok({ email: normalized, password });
}
