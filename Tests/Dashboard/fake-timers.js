// A clock the tests move by hand: setTimeout/clearTimeout as lib/poll.js and lib/search.js take
// them, and advance(ms), which runs what falls due in order and lets each callback's awaits finish.

export function fakeTimers() {
  let now = 0;
  let nextId = 1;
  const pending = new Map(); // id -> {at, fn}
  const settle = async () => { for (let i = 0; i < 20; i += 1) await Promise.resolve(); };
  return {
    setTimeout(fn, ms) {
      const id = nextId++;
      pending.set(id, { at: now + Math.max(0, ms), fn });
      return id;
    },
    clearTimeout(id) { pending.delete(id); },
    get now() { return now; },
    get pending() { return pending.size; },
    /** Moves the clock `ms` forward, running every timer due on the way. */
    async advance(ms) {
      await settle(); // what was resolved since the last advance schedules its timers at the current time
      const end = now + ms;
      for (;;) {
        const due = [...pending.entries()].filter(([, t]) => t.at <= end).sort((a, b) => a[1].at - b[1].at || a[0] - b[0]);
        if (!due.length) break;
        const [id, timer] = due[0];
        pending.delete(id);
        now = timer.at;
        timer.fn();
        await settle();
      }
      now = end;
      await settle();
    },
  };
}

/** A promise with its resolve and reject, for answers the test releases when it wants. */
export function deferred() {
  let resolve;
  let reject;
  const promise = new Promise((yes, no) => { resolve = yes; reject = no; });
  return { promise, resolve, reject };
}
