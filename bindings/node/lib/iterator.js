'use strict';
/* The async iterator of a Watch's notices and of a LiveSync's states: a queue filled by push,
 * ended by finish (with an error, or null), and `await(delta)` told when a next() starts or
 * stops waiting, so its owner can keep the process alive only while someone waits. */

/** @param {{initial?: any[], iterators: Set<any>, await: (delta: number) => void,
 *           onReturn?: () => Promise<void>}} options */
function eventIterator({ initial = [], iterators, await: waits, onReturn }) {
  const queue = initial.slice();
  const waiting = [];
  let finished = false, failure = null;
  const it = {
    push: (value) => {
      if (waiting.length) {
        waits(-1);
        waiting.shift().resolve({ value, done: false });
      } else queue.push(value);
    },
    finish: (error) => {
      finished = true;
      failure = error;
      iterators.delete(it);
      for (const w of waiting.splice(0)) {
        waits(-1);
        if (failure) { w.reject(failure); failure = null; } else w.resolve({ value: undefined, done: true });
      }
    },
    next: () => {
      if (queue.length) return Promise.resolve({ value: queue.shift(), done: false });
      if (failure) {
        const error = failure;
        failure = null;
        return Promise.reject(error);
      }
      if (finished) return Promise.resolve({ value: undefined, done: true });
      waits(1); // someone waits for the next value: the process stays until it comes
      return new Promise((resolve, reject) => waiting.push({ resolve, reject }));
    },
    return: async () => {
      it.finish(null);
      queue.length = 0;
      if (onReturn) await onReturn();
      return { value: undefined, done: true };
    },
    [Symbol.asyncIterator]() { return it; },
  };
  return it;
}

module.exports = { eventIterator };
