import { SECURITY_SCHEME } from "../operations/openapi.js";
import {
  BODY_REFUSALS,
  emptyResponse,
  envelopeResponse,
  errorJsonResponse,
  INVALID_TOKEN,
  INVALID_TOKEN_OR_USER_GONE,
  routeResponses,
} from "./responses.js";
import { CredentialsBodySchema, LoginSchema, UserSchema } from "./user-schemas.js";

const TAGS = ["users"];
const SECURED = [{ [SECURITY_SCHEME]: [] }];

const noUser = envelopeResponse("No token, or no ROLE_USER");

/** POST /api/v1/user: register. */
export const RegisterRouteSchema = {
  summary: "Register",
  tags: TAGS,
  body: CredentialsBodySchema,
  response: routeResponses({
    201: { ...UserSchema, description: "Registered; Location ends in /api/v1/user" },
    400: envelopeResponse("Body not a JSON object, or every failing field"),
    401: INVALID_TOKEN,
    409: envelopeResponse("Email already registered"),
    ...BODY_REFUSALS,
    429: envelopeResponse("Too many registrations of taken emails from this address; see Retry-After"),
  }),
};

/** POST /api/v1/user/login: exchange email and password for a token. */
export const LoginRouteSchema = {
  summary: "Log in: exchange email and password for a token",
  tags: TAGS,
  body: CredentialsBodySchema,
  response: routeResponses({
    200: LoginSchema,
    400: envelopeResponse("Body not a JSON object"),
    401: errorJsonResponse("Unknown email or wrong password (one message for both), or an invalid token"),
    ...BODY_REFUSALS,
    429: envelopeResponse("Too many failures from this address or for this email; see Retry-After"),
  }),
};

/** GET /api/v1/user: one's own account. */
export const ReadAccountRouteSchema = {
  summary: "Read one's own account",
  tags: TAGS,
  security: SECURED,
  response: routeResponses({ 200: UserSchema, 401: INVALID_TOKEN_OR_USER_GONE, 403: noUser }),
};

/** DELETE /api/v1/user: one's own account and every post one wrote. */
export const DeleteAccountRouteSchema = {
  summary: "Delete one's own account and every post one wrote",
  tags: TAGS,
  security: SECURED,
  response: routeResponses({
    204: emptyResponse("Deleted, with every post of the user"),
    401: INVALID_TOKEN_OR_USER_GONE,
    403: noUser,
  }),
};
