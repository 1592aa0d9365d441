/**
 * A position in the write-ahead log as a number, so that two positions compare with `<`.
 * PostgreSQL prints a `pg_lsn` as two hexadecimal halves, `16/B374D848`; `null` (a function
 * asked of a server that is not in recovery) has no position.
 */
export type WalPosition = bigint;

const LSN = /^([0-9A-F]{1,8})\/([0-9A-F]{1,8})$/i;

/** The position PostgreSQL printed as `text`, or `undefined` for anything that is not a `pg_lsn`. */
export function parseWalPosition(text: unknown): WalPosition | undefined {
  if (typeof text !== "string") return undefined;
  const match = LSN.exec(text);
  if (match === null) return undefined;
  return (BigInt(`0x${match[1]}`) << 32n) | BigInt(`0x${match[2]}`);
}
