// Loaded into tap's runner by scripts/test.mjs (`node --import=./scripts/tap-order.mjs …/run.mjs`): makes tap
// start the longest files first. tap sorts the files it runs by name and starts them in that order, `jobs` at a
// time; a run then ends with one job still busy on a long file named late in the alphabet while the other core
// idles. Longest first (from STOAT_TEST_ORDER, a JSON object of file → expected milliseconds) leaves the short
// files for the end, where they fill both jobs (issue 40).
//
// tap has no option for the order, so this hook rewrites the one comparator of @tapjs/run's list.js; when tap
// changes that line, the hook says so and tap keeps its own order (nothing else changes).
import { register } from 'node:module';

if (process.env.STOAT_TEST_ORDER) {
  register(new URL('./tap-order-hooks.mjs', import.meta.url), { data: { order: process.env.STOAT_TEST_ORDER } });
  delete process.env.STOAT_TEST_ORDER; // not handed down to the test processes
}
