/** The user-facing validation messages, as the contract words them. */
export const MESSAGES = {
  titleRequired: "게시글 제목을 입력해주세요.",
  contentRequired: "게시글 내용을 입력해주세요.",
  titleNotString: "게시글 제목은 문자열이어야 합니다.",
  contentNotString: "게시글 내용은 문자열이어야 합니다.",
  titleTooLong: "게시글 제목은 255자 이하로 입력해주세요.",
  titleInvalidCharacter: "게시글 제목에 사용할 수 없는 문자가 포함되어 있습니다.",
  contentInvalidCharacter: "게시글 내용에 사용할 수 없는 문자가 포함되어 있습니다.",
  emailInvalid: "올바른 이메일 주소를 입력해주세요.",
  passwordInvalid: "비밀번호는 8자 이상 128자 이하로 입력해주세요.",
  passwordInvalidCharacter: "비밀번호에 사용할 수 없는 문자가 포함되어 있습니다.",
  sizeInvalid: "size는 1 이상 100 이하의 정수여야 합니다.",
  cursorInvalid: "cursor가 올바르지 않습니다.",
  userIdInvalid: "userId는 0 이상의 정수여야 합니다.",
  searchNotString: "검색어(q)는 문자열이어야 합니다.",
  searchTooLong: "검색어(q)는 200자 이하로 입력해주세요.",
  searchInvalidCharacter: "검색어(q)에 사용할 수 없는 문자가 포함되어 있습니다.",
} as const;
