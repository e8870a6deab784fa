// Module hooks of scripts/tap-order.mjs (they run on Node's hooks thread): rewrites the file comparator of
// @tapjs/run's list.js so that files with a longer expected time come first (ties and unknown files by name).
const TAP_SORT = "(a, b) => a.localeCompare(b, 'en')";

let order = '{}';

/** Receives the expected times (a JSON object of file → ms) from scripts/tap-order.mjs. */
export function initialize(data) {
  order = data.order;
}

export async function load(url, context, nextLoad) {
  const loaded = await nextLoad(url, context);
  if (!url.endsWith('/@tapjs/run/dist/esm/list.js')) return loaded;
  const source = String(loaded.source);
  if (!source.includes(TAP_SORT)) {
    process.stderr.write('# scripts/tap-order-hooks.mjs: tap\'s list.js changed, files run in tap\'s order\n');
    return loaded;
  }
  const byTime = `((expected) => (a, b) => (expected[b] ?? 0) - (expected[a] ?? 0) || a.localeCompare(b, 'en'))(${order})`;
  return { ...loaded, source: source.replace(TAP_SORT, byTime) };
}
