/**
 * Waits until `arm` calls its `settle`, `timeoutMs` passes (never when it is undefined) or
 * `signal` aborts, whichever comes first, and answers the value settled, else `otherwise`. The
 * wait then clears its timer, removes its abort listener and calls the disarm `arm` returned,
 * however it ended: a long-lived signal collects no listener, and no `AbortSignal.any` or
 * `AbortSignal.timeout` is made per wait (each leaves a WeakRef in the signals it follows, which
 * Node 20 never clears).
 *
 * The same function is `src/connection/wait-until.ts` of adapters-postgres, `src/events/` of
 * adapters-http, `src/` of adapters-nats, app and client: adapters never import one another,
 * @posts/client imports nothing of ours, and the domain holds the rules of posts, not timers, so
 * each package that waits keeps a copy; a change to one is a change to all five.
 */
export function waitUntil<T>(
  arm: (settle: (value: T) => void) => (() => void) | undefined,
  options: { readonly signal?: AbortSignal | undefined; readonly timeoutMs?: number; readonly otherwise: T },
): Promise<T> {
  const { signal, timeoutMs, otherwise } = options;
  if (signal?.aborted) return Promise.resolve(otherwise);
  return new Promise<T>((resolve) => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    let disarm: (() => void) | undefined;
    let settled = false;
    const settle = (value: T) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      disarm?.();
      resolve(value);
    };
    const onAbort = () => settle(otherwise);
    if (timeoutMs !== undefined) timer = setTimeout(onAbort, timeoutMs);
    signal?.addEventListener("abort", onAbort, { once: true });
    disarm = arm(settle);
    // Settled while arming: the disarm was not known yet.
    if (settled) disarm?.();
  });
}
