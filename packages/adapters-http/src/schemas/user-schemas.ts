import { EMAIL_MAX_LENGTH, PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH } from "@posts/domain";
import { type Static, Type } from "typebox";
import { TimestampSchema } from "./common-schemas.js";

/** Body of registration and login. Documentation only: the domain validates it. */
export const CredentialsBodySchema = Type.Object({
  email: Type.String({
    format: "email",
    maxLength: EMAIL_MAX_LENGTH,
    description: "Trimmed and lower-cased",
  }),
  password: Type.String({ minLength: PASSWORD_MIN_LENGTH, maxLength: PASSWORD_MAX_LENGTH }),
});

/** A user as they see their own account: never the password or its hash. */
export const UserSchema = Type.Object(
  { id: Type.Integer({ minimum: 1 }), email: Type.String(), createdAt: TimestampSchema },
  { additionalProperties: false },
);

/** A user as the wire shows it. */
export type UserJson = Static<typeof UserSchema>;

/** The answer to a successful login. */
export const LoginSchema = Type.Object(
  {
    tokenType: Type.Literal("Bearer", { description: "Send the token as X-AUTH-TOKEN, without this prefix" }),
    token: Type.String({ description: "HS256 JWT" }),
    expiresIn: Type.Integer({ description: "Lifetime in milliseconds", examples: [86_400_000] }),
  },
  { additionalProperties: false },
);
