// Following something in flight (a message's deliveries, a run's steps, the first page of a list)
// until it settles: one loop, one interval, for every page.

/** How often a page asks again while something it shows is still moving. */
export const POLL_INTERVAL_MS = 2000;

/**
 * Calls `refresh()` every `interval` ms while `settled()` is false; while it is true nothing is
 * asked (it may turn false again: a list paged back to sends in flight). Ticks never overlap: the
 * next is timed from the end of the last refresh. A refresh that fails is tried again on the next
 * tick (the page shows what it had). The loop ends for good when `signal` aborts (the page was
 * left) or the returned function is called. `timers` ({setTimeout, clearTimeout}) is for tests.
 */
export function pollUntilSettled({ refresh, settled = () => false, interval = POLL_INTERVAL_MS, signal, timers = globalThis }) {
  let timer = null;
  let stopped = false;
  const stop = () => {
    stopped = true;
    timers.clearTimeout(timer);
  };
  const tick = async () => {
    if (stopped) return;
    if (!settled()) {
      try { await refresh(); } catch { /* tried again on the next tick */ }
    }
    if (!stopped) timer = timers.setTimeout(tick, interval);
  };
  if (signal?.aborted) return stop;
  signal?.addEventListener('abort', stop, { once: true });
  timer = timers.setTimeout(tick, interval);
  return stop;
}
