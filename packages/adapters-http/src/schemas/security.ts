import { SECURITY_SCHEME } from "../operations/openapi.js";

/** An operation that needs a token with ROLE_USER in `X-AUTH-TOKEN`. */
export const SECURED = [{ [SECURITY_SCHEME]: [] }];

/** Anyone may call it; an X-AUTH-TOKEN sent anyway must still be valid (else 401). */
export const PUBLIC: never[] = [];
