import { parseArgs } from "node:util";

/** What the suite needs to know about the deployment it checks. */
export interface ConformanceOptions {
  /** Origin of the deployment, e.g. `http://127.0.0.1:8080` (no path, query or fragment). */
  readonly baseUrl: URL;
  /**
   * The deployment's `JWT_SECRET`, as text. Without it the cases that forge tokens are skipped;
   * the ones that need no key (alg `none`, another key's signature, a garbled signature) still run.
   */
  readonly jwtSecret: string | undefined;
  /** The deployment's `JWT_ISSUER`. */
  readonly jwtIssuer: string;
  /** The deployment's `BODY_LIMIT`, in bytes. */
  readonly bodyLimit: number;
  /** The deployment's `APP_TIME_ZONE` (IANA name). */
  readonly timeZone: string;
  /** The deployment's `LOGIN_THROTTLE_MAX`: failed logins of one email before its 429. */
  readonly loginThrottleMax: number;
  /** The deployment's `FEED_MAX_STREAMS_PER_ADDRESS`: change-feed streams of one address before its 429. */
  readonly feedMaxStreamsPerAddress: number;
}

/** The outcome of reading the command line. */
export type ParsedArguments =
  | { readonly kind: "run"; readonly options: ConformanceOptions }
  | { readonly kind: "help" }
  | { readonly kind: "error"; readonly message: string };

/** What `--help` prints. */
export const USAGE = `Usage: posts-conformance --base-url <url> [options]

Checks a running posts service against the contract docs/ states, over HTTP only.
Creates its own users (random emails), deletes them at the end (their posts go with them).

Options:
  --base-url <url>           origin of the deployment, e.g. http://127.0.0.1:8080 (required)
  --jwt-secret <text>        the deployment's JWT_SECRET; without it the cases that forge
                             tokens are skipped and listed
  --jwt-issuer <text>        the deployment's JWT_ISSUER (default posts-service)
  --body-limit <bytes>       the deployment's BODY_LIMIT (default 16777216)
  --time-zone <iana>         the deployment's APP_TIME_ZONE (default UTC)
  --login-throttle-max <n>   the deployment's LOGIN_THROTTLE_MAX (default 10)
  --feed-max-streams-per-address <n>
                             the deployment's FEED_MAX_STREAMS_PER_ADDRESS (default 20)
  --help                     print this and exit

Ends with one line "N passed, M failed" (", K skipped" when cases were skipped);
exits 0 when nothing failed, 1 when something did, 2 on a usage error.
`;

const MIN_SECRET_BYTES = 32;

/**
 * Reads the suite's command line (the arguments after the script name). Never throws and never
 * exits: a bad argument is `{kind: "error"}` with a message naming it.
 */
export function parseArguments(argv: readonly string[]): ParsedArguments {
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({
      args: [...argv],
      strict: true,
      allowPositionals: false,
      options: {
        "base-url": { type: "string" },
        "jwt-secret": { type: "string" },
        "jwt-issuer": { type: "string", default: "posts-service" },
        "body-limit": { type: "string", default: "16777216" },
        "time-zone": { type: "string", default: "UTC" },
        "login-throttle-max": { type: "string", default: "10" },
        "feed-max-streams-per-address": { type: "string", default: "20" },
        help: { type: "boolean", short: "h" },
      },
    }));
  } catch (error) {
    return { kind: "error", message: (error as Error).message };
  }
  if (values.help === true) return { kind: "help" };

  const text = (name: string) => values[name] as string;
  const rawBaseUrl = values["base-url"] as string | undefined;
  if (rawBaseUrl === undefined) return { kind: "error", message: "--base-url is required" };
  const baseUrl = URL.canParse(rawBaseUrl) ? new URL(rawBaseUrl) : undefined;
  if (baseUrl === undefined || (baseUrl.protocol !== "http:" && baseUrl.protocol !== "https:")) {
    return { kind: "error", message: `--base-url must be an http:// or https:// URL, got ${rawBaseUrl}` };
  }
  // The contract's envelopes name the path the service saw; a prefix a proxy strips would make
  // every such check wrong, so only an origin is accepted.
  if (baseUrl.pathname !== "/" || baseUrl.search !== "" || baseUrl.hash !== "") {
    return { kind: "error", message: `--base-url must be an origin without a path, got ${rawBaseUrl}` };
  }

  const jwtSecret = values["jwt-secret"] as string | undefined;
  if (jwtSecret !== undefined && Buffer.byteLength(jwtSecret, "utf8") < MIN_SECRET_BYTES) {
    return {
      kind: "error",
      message: `--jwt-secret is shorter than ${MIN_SECRET_BYTES} bytes: no deployment accepts such a key`,
    };
  }
  const jwtIssuer = text("jwt-issuer");
  if (jwtIssuer === "") return { kind: "error", message: "--jwt-issuer must not be empty" };

  const bodyLimit = positiveInteger(text("body-limit"));
  if (bodyLimit === undefined) {
    return { kind: "error", message: `--body-limit must be a positive integer, got ${text("body-limit")}` };
  }
  const loginThrottleMax = positiveInteger(text("login-throttle-max"));
  if (loginThrottleMax === undefined) {
    return {
      kind: "error",
      message: `--login-throttle-max must be a positive integer, got ${text("login-throttle-max")}`,
    };
  }
  const feedMaxStreamsPerAddress = positiveInteger(text("feed-max-streams-per-address"));
  if (feedMaxStreamsPerAddress === undefined) {
    return {
      kind: "error",
      message: `--feed-max-streams-per-address must be a positive integer, got ${text("feed-max-streams-per-address")}`,
    };
  }
  const timeZone = text("time-zone");
  if (!isTimeZone(timeZone))
    return { kind: "error", message: `--time-zone is not an IANA zone: ${timeZone}` };

  return {
    kind: "run",
    options: {
      baseUrl,
      jwtSecret,
      jwtIssuer,
      bodyLimit,
      timeZone,
      loginThrottleMax,
      feedMaxStreamsPerAddress,
    },
  };
}

function positiveInteger(text: string): number | undefined {
  if (!/^[0-9]+$/.test(text)) return undefined;
  const value = Number(text);
  return Number.isSafeInteger(value) && value > 0 ? value : undefined;
}

function isTimeZone(name: string): boolean {
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: name });
    return true;
  } catch {
    return false;
  }
}
