import { readFileSync } from "node:fs";

/** One mebibyte, for the bounds the tests state in MiB. */
export const MIB = 1024 * 1024;

/**
 * The resident set size of process `pid` (VmRSS) and its peak since the process started
 * (VmHWM, as the kernel counts it, so that a peak between two samples is not missed), in bytes,
 * from /proc.
 */
export function processMemory(pid: number): { readonly rss: number; readonly peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kib = (field: string) =>
    Number(new RegExp(`^${field}:\\s+(\\d+) kB$`, "m").exec(status)?.[1] ?? Number.NaN);
  return { rss: kib("VmRSS") * 1024, peak: kib("VmHWM") * 1024 };
}
