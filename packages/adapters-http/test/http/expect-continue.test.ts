import type { AddressInfo } from "node:net";
import { connect } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { headOnly } from "../support/head-only.js";
import { buildTestApp, type TestApp } from "../support/test-app.js";

const LIMIT = 64 * 1024;

describe("Expect: 100-continue over a real socket", () => {
  let testApp: TestApp;
  let port: number;
  let token: string;
  const post = (length: number, headers = "") =>
    `POST /api/v1/posts HTTP/1.1\r\nHost: localhost\r\nX-AUTH-TOKEN: ${token}\r\n` +
    `Content-Type: application/json\r\nContent-Length: ${length}\r\nExpect: 100-continue\r\n${headers}\r\n`;

  beforeAll(async () => {
    testApp = await buildTestApp({ bodyLimit: LIMIT });
    await testApp.app.listen({ port: 0, host: "127.0.0.1" });
    port = (testApp.app.server.address() as AddressInfo).port;
    token = (await testApp.aUserWithToken()).token;
  });
  afterAll(async () => {
    await testApp.app.close();
  });

  it("answers 413 instead of 100 Continue to a Content-Length over the limit", async () => {
    const answer = await headOnly(port, post(99_999_999));
    expect(answer).toMatch(/^HTTP\/1\.1 413 /);
    expect(answer).not.toContain("100 Continue");
    expect(answer).toContain('"error":"Payload Too Large"');
  });

  it("still answers 401 and 403 first, without 100 Continue", async () => {
    const forbidden = await headOnly(
      port,
      "POST /api/v1/posts HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n" +
        "Content-Length: 99999999\r\nExpect: 100-continue\r\n\r\n",
    );
    expect(forbidden).toMatch(/^HTTP\/1\.1 403 /);
    const invalid = await headOnly(port, post(99_999_999).replace(token, "not-a-token"));
    expect(invalid).toMatch(/^HTTP\/1\.1 401 /);
  });

  it("asks for a body within the limit with 100 Continue, then creates the post", async () => {
    const body = JSON.stringify({ title: "t", content: "c" });
    const answer = await new Promise<string>((resolve) => {
      const socket = connect(port, "127.0.0.1", () =>
        socket.write(post(Buffer.byteLength(body), "Connection: close\r\n")),
      );
      let text = "";
      socket.on("data", (chunk) => {
        text += chunk.toString();
        if (text === "HTTP/1.1 100 Continue\r\n\r\n") socket.write(body);
      });
      socket.on("end", () => resolve(text));
    });
    expect(answer).toMatch(/^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 201 /);
  });
});
