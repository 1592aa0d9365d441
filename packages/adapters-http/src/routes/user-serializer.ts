import type { PublicUser } from "@posts/domain";
import type { TimestampFormatter } from "../http/timestamp-formatter.js";
import type { UserJson } from "../schemas/user-schemas.js";

/** Maps a user's public view to its wire form, as `UserSchema` describes it. */
export function toUserJson(user: PublicUser, format: TimestampFormatter): UserJson {
  return { id: user.id, email: user.email, createdAt: format(user.createdAt) };
}
