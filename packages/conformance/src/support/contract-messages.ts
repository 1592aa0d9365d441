/** The contract's fixed messages, which a deployment must answer byte for byte. */

/** The text of a 404 for a post that does not exist (GET, PATCH, DELETE). */
export const POST_NOT_FOUND = "게시글을 찾을 수 없습니다.";
/** The text of a 401 for a PATCH by someone other than the author. */
export const NOT_AUTHOR_TO_MODIFY = "게시글 작성자만 수정할 수 있습니다.";
/** The text of a 401 for a DELETE by someone other than the author. */
export const NOT_AUTHOR_TO_DELETE = "게시글 작성자만 삭제할 수 있습니다.";
/** The field error of a missing or blank title. */
export const TITLE_REQUIRED = "게시글 제목을 입력해주세요.";
/** The field error of a missing or blank content. */
export const CONTENT_REQUIRED = "게시글 내용을 입력해주세요.";
