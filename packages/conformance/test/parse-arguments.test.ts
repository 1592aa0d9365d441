import { describe, expect, it } from "vitest";
import { parseArguments } from "../src/parse-arguments.js";

const SECRET = "s".repeat(32);

describe("parseArguments", () => {
  it("needs only --base-url and fills in the deployment's defaults", () => {
    const parsed = parseArguments(["--base-url", "http://127.0.0.1:8080"]);
    expect(parsed).toStrictEqual({
      kind: "run",
      options: {
        baseUrl: new URL("http://127.0.0.1:8080"),
        jwtSecret: undefined,
        jwtIssuer: "posts-service",
        bodyLimit: 16_777_216,
        timeZone: "UTC",
        loginThrottleMax: 10,
        feedMaxStreamsPerAddress: 20,
      },
    });
  });

  it("reads every option, in either --name value or --name=value form", () => {
    const parsed = parseArguments([
      "--base-url=https://posts.example.com/",
      "--jwt-secret",
      SECRET,
      "--jwt-issuer=issuer",
      "--body-limit",
      "1024",
      "--time-zone=Asia/Seoul",
      "--login-throttle-max=3",
      "--feed-max-streams-per-address=4",
    ]);
    expect(parsed).toStrictEqual({
      kind: "run",
      options: {
        baseUrl: new URL("https://posts.example.com/"),
        jwtSecret: SECRET,
        jwtIssuer: "issuer",
        bodyLimit: 1024,
        timeZone: "Asia/Seoul",
        loginThrottleMax: 3,
        feedMaxStreamsPerAddress: 4,
      },
    });
  });

  it("answers help for --help and -h, whatever else is given", () => {
    expect(parseArguments(["--help"])).toStrictEqual({ kind: "help" });
    expect(parseArguments(["-h", "--base-url", "x"])).toStrictEqual({ kind: "help" });
  });

  it.each([
    [[], /--base-url is required/],
    [["--base-url", "127.0.0.1:8080"], /http:\/\/ or https:\/\//],
    [["--base-url", "ftp://host"], /http:\/\/ or https:\/\//],
    [["--base-url", "http://host/prefix"], /origin without a path/],
    [["--base-url", "http://host/?x=1"], /origin without a path/],
    [["--base-url", "http://host", "--jwt-secret", "short"], /shorter than 32 bytes/],
    [["--base-url", "http://host", "--body-limit", "16MiB"], /--body-limit must be a positive integer/],
    [["--base-url", "http://host", "--body-limit", "0"], /--body-limit must be a positive integer/],
    [["--base-url", "http://host", "--login-throttle-max", "-1"], /--login-throttle-max/],
    [["--base-url", "http://host", "--feed-max-streams-per-address", "0"], /--feed-max-streams-per-address/],
    [["--base-url", "http://host", "--time-zone", "Mars/Olympus"], /not an IANA zone/],
    [["--base-url", "http://host", "--jwt-issuer="], /--jwt-issuer must not be empty/],
    [["--base-url", "http://host", "--unknown"], /Unknown option/],
    [["--base-url", "http://host", "positional"], /positional/],
  ])("refuses %j with a message naming the problem", (argv, message) => {
    const parsed = parseArguments(argv);
    expect(parsed.kind).toBe("error");
    expect(parsed.kind === "error" ? parsed.message : "").toMatch(message);
  });
});
