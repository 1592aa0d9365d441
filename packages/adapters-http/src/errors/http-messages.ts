/**
 * Every message the HTTP adapter itself puts in a response. Fixed texts only: no message
 * ever echoes a library's or a database's error text, so nothing internal leaks.
 */
export const HTTP_MESSAGES = {
  invalidToken: "인증 토큰이 유효하지 않습니다.",
  expiredToken: "인증 토큰이 만료되었습니다.",
  userGone: "토큰의 사용자가 존재하지 않습니다.",
  invalidCredentials: "이메일 또는 비밀번호가 올바르지 않습니다.",
  forbidden: "이 요청을 수행할 권한이 없습니다.",
  postNotFound: "게시글을 찾을 수 없습니다.",
  notAuthorToModify: "게시글 작성자만 수정할 수 있습니다.",
  notAuthorToDelete: "게시글 작성자만 삭제할 수 있습니다.",
  preconditionFailed: "게시글이 그사이 변경되었습니다. 최신 게시글을 다시 읽은 뒤 시도해주세요.",
  invalidIdempotencyKey: "Idempotency-Key는 공백 없는 ASCII 문자 1자 이상 255자 이하여야 합니다.",
  idempotencyKeyReused: "이 Idempotency-Key는 다른 제목이나 내용의 게시글에 이미 사용되었습니다.",
  emailTaken: "이미 가입된 이메일입니다.",
  notFound: "요청한 경로를 찾을 수 없습니다.",
  methodNotAllowed: "이 경로는 요청한 메서드를 지원하지 않습니다.",
  bodyNotObject: "요청 본문은 JSON 객체여야 합니다.",
  malformedJson: "요청 본문이 올바른 JSON이 아닙니다.",
  emptyBody: "요청 본문이 비어 있습니다.",
  unsupportedMediaType: "요청 본문은 application/json 이어야 합니다.",
  payloadTooLarge: "요청 본문이 허용된 크기를 넘었습니다.",
  badRequest: "잘못된 요청입니다.",
  invalidHost: "Host 헤더가 올바른 호스트[:포트]가 아닙니다.",
  requestTimeout: "요청이 제한 시간 안에 도착하지 않았습니다.",
  headersTooLarge: "요청 헤더가 허용된 크기를 넘었습니다.",
  tooManyAttempts: "실패한 시도가 너무 많습니다. 잠시 후 다시 시도해주세요.",
  tooManyStreams: "열려 있는 이벤트 스트림이 너무 많습니다. 잠시 후 다시 시도해주세요.",
  unavailable: "서비스를 일시적으로 사용할 수 없습니다. 잠시 후 다시 시도해주세요.",
  notReady: "서비스가 아직 요청을 받을 준비가 되지 않았습니다.",
  internal: "요청을 처리하는 중 오류가 발생했습니다.",
} as const;
