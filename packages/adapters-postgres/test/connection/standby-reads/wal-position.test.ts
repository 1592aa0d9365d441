import { describe, expect, it } from "vitest";
import { parseWalPosition } from "../../../src/connection/standby-reads/wal-position.js";

describe("WAL positions", () => {
  it("read PostgreSQL's pg_lsn text as one number that orders as the log does", () => {
    expect(parseWalPosition("0/0")).toBe(0n);
    expect(parseWalPosition("16/B374D848")).toBe(0x16b374d848n);
    expect(parseWalPosition("1/0")! > parseWalPosition("0/FFFFFFFF")!).toBe(true);
    expect(parseWalPosition(null)).toBeUndefined();
    expect(parseWalPosition("16B374D848")).toBeUndefined();
  });
});
