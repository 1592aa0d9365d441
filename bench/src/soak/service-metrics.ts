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
