// Sending a composed request once, however often the button is pressed: one idempotency key per
// composition (the Send page's message, the Live Activities page's start, update or end).

/**
 * `newKey()` makes a key. `send(fn)` calls `fn(key)` unless a send is in flight, in which case it
 * returns that send's promise (a double click sends once). After a success the next composition
 * gets a new key; after a failure the key stays, so sending the same request again (after a
 * timeout or an answer lost on the way) is answered from the server's record of the first, never
 * sent twice. `edited()` starts a new composition: a new key at once, or, while a send is in
 * flight, as soon as it ends.
 */
export function oncePerKey(newKey) {
  let key = newKey();
  let inFlight = null;
  let editedMeanwhile = false;
  return {
    get key() { return key; },
    get sending() { return inFlight !== null; },
    edited() {
      if (inFlight) editedMeanwhile = true;
      else key = newKey();
    },
    send(fn) {
      if (inFlight) return inFlight;
      const used = key;
      inFlight = (async () => {
        let succeeded = false;
        try {
          const result = await fn(used);
          succeeded = true;
          return result;
        } finally {
          if (succeeded || editedMeanwhile) key = newKey();
          editedMeanwhile = false;
          inFlight = null;
        }
      })();
      return inFlight;
    },
  };
}
