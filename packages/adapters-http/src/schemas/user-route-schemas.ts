import {
  BODY_REFUSALS,
  emptyResponse,
  envelopeResponse,
  errorJsonResponse,
  INVALID_TOKEN,
  INVALID_TOKEN_OR_USER_GONE,
  jsonResponse,
  retryLaterResponse,
  routeResponses,
} from "./responses.js";
import { PUBLIC, SECURED } from "./security.js";
import { CredentialsBodySchema, LoginSchema, UserSchema } from "./user-schemas.js";

const TAGS = ["users"];

const noUser = envelopeResponse("No token, or no ROLE_USER");

/** POST /api/v1/user: register. */
export const RegisterRouteSchema = {
  operationId: "registerUser",
  summary: "Register",
  tags: TAGS,
  security: PUBLIC,
  body: CredentialsBodySchema,
  response: routeResponses({
    201: jsonResponse("Registered", UserSchema, {
      Location: {
        type: "string",
        format: "uri",
        description: "Absolute URL of one's account: …/api/v1/user",
      },
    }),
    400: envelopeResponse("Body not a JSON object, or every failing field"),
    401: INVALID_TOKEN,
    409: envelopeResponse("Email already registered"),
    ...BODY_REFUSALS,
    429: retryLaterResponse("Too many registrations of taken emails from this address; see Retry-After"),
  }),
};

/** POST /api/v1/user/login: exchange email and password for a token. */
export const LoginRouteSchema = {
  operationId: "logIn",
  summary: "Log in: exchange email and password for a token",
  tags: TAGS,
  security: PUBLIC,
  body: CredentialsBodySchema,
  response: routeResponses({
    200: jsonResponse("A token", LoginSchema, {
      "Cache-Control": { type: "string", enum: ["no-store"], description: "A token must not sit in a cache" },
    }),
    400: envelopeResponse("Body not a JSON object, or an email or password that is not well-formed Unicode"),
    401: errorJsonResponse("Unknown email or wrong password (one message for both), or an invalid token"),
    ...BODY_REFUSALS,
    429: retryLaterResponse("Too many failures from this address or for this email; see Retry-After"),
  }),
};

/** GET /api/v1/user: one's own account. */
export const ReadAccountRouteSchema = {
  operationId: "getCurrentUser",
  summary: "Read one's own account",
  tags: TAGS,
  security: SECURED,
  response: routeResponses({
    200: jsonResponse("One's account", UserSchema),
    401: INVALID_TOKEN_OR_USER_GONE,
    403: noUser,
  }),
};

/** DELETE /api/v1/user: one's own account and every post one wrote. */
export const DeleteAccountRouteSchema = {
  operationId: "deleteCurrentUser",
  summary: "Delete one's own account and every post one wrote",
  tags: TAGS,
  security: SECURED,
  response: routeResponses({
    204: emptyResponse("Deleted, with every post of the user"),
    401: INVALID_TOKEN_OR_USER_GONE,
    403: noUser,
  }),
};
