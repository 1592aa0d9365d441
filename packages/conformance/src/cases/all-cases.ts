import type { ConformanceCase } from "../runner/conformance-case.js";
import { authenticationCases } from "./authentication-cases.js";
import { changeEventCases } from "./change-event-cases.js";
import { conditionalRequestCases } from "./conditional-request-cases.js";
import { createPostCases } from "./create-post-cases.js";
import { deletePostCases } from "./delete-post-cases.js";
import { genericErrorCases } from "./generic-error-cases.js";
import { getPostCases } from "./get-post-cases.js";
import { idempotencyCases } from "./idempotency-cases.js";
import { pageCases } from "./page-cases.js";
import { patchPostCases } from "./patch-post-cases.js";
import { postValidationCases } from "./post-validation-cases.js";
import { searchCases } from "./search-cases.js";
import { userCases } from "./user-cases.js";
import { wireFormatCases } from "./wire-format-cases.js";

/** Every case of the suite, in the order of the contract's sections. */
export const allCases: readonly ConformanceCase[] = [
  ...wireFormatCases,
  ...createPostCases,
  ...postValidationCases,
  ...patchPostCases,
  ...deletePostCases,
  ...getPostCases,
  ...pageCases,
  ...userCases,
  ...authenticationCases,
  ...genericErrorCases,
  ...conditionalRequestCases,
  ...idempotencyCases,
  ...searchCases,
  ...changeEventCases,
];
