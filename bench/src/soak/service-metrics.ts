/**
 * One gauge of a service's Prometheus text at `${url}/metrics`: the value of the sample named
 * `name` without labels, or 0 when the service does not answer (within 2 s) or has no such gauge.
 */
export async function metricValue(url: string, name: string): Promise<number> {
  try {
    const response = await fetch(`${url}/metrics`, { signal: AbortSignal.timeout(2000) });
    const text = await response.text();
    return Number(new RegExp(`^${name} (\\d+(?:\\.\\d+)?(?:e[+-]?\\d+)?)`, "m").exec(text)?.[1] ?? 0);
  } catch {
    return 0;
  }
}

/**
 * The sum of every sample of `name` at `${url}/metrics`, whatever its labels (a counter per
 * standby, per reason): 0 when the service does not answer (within 2 s) or has no such metric.
 */
export async function metricSum(url: string, name: string): Promise<number> {
  try {
    const response = await fetch(`${url}/metrics`, { signal: AbortSignal.timeout(2000) });
    const text = await response.text();
    let sum = 0;
    for (const match of text.matchAll(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, "gm")))
      sum += Number(match[1]);
    return sum;
  } catch {
    return 0;
  }
}
