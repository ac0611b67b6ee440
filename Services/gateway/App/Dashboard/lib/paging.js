// Keyset paging over the API's cursors: page n is read with the cursor page n-1's answer gave.

/**
 * `load(cursor)` answers {data, metadata: {cursor, hasMore}}. `go(to)` reads page `to` (the
 * current one, the one before it or the next) and resolves to {items, page, first, hasMore}, or to
 * null when a later go() started before it answered (its answer is stale and not shown: typing
 * in a search box never shows an older search's page). `refresh()` reads the current page again
 * unless a read is in flight (a poll never overtakes a page the user asked for).
 */
export function keysetPaging({ load, pageSize }) {
  const cursors = [null];
  let index = 0;
  let next = null;
  let hasMore = false;
  let latest = 0;
  let inFlight = 0;
  async function go(to) {
    const target = Math.max(0, to);
    let cursor;
    if (target <= index) cursor = cursors[target];
    else if (target === index + 1 && next) cursor = next;
    else return null;
    const mine = ++latest;
    inFlight += 1;
    try {
      const { data, metadata = {} } = await load(cursor);
      if (mine !== latest) return null;
      cursors.length = target + 1;
      cursors[target] = cursor;
      index = target;
      next = metadata.cursor || null;
      hasMore = Boolean(metadata.hasMore) && Boolean(next);
      return { items: data, page: index, first: index * pageSize + 1, hasMore };
    } finally {
      inFlight -= 1;
    }
  }
  return {
    go,
    refresh: () => (inFlight ? Promise.resolve(null) : go(index)),
    get page() { return index; },
    get hasMore() { return hasMore; },
    get busy() { return inFlight > 0; },
  };
}
