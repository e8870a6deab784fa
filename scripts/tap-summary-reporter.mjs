// tap reporter: passes the raw TAP stream through and ends with one plain line
// `N passed, N failed`, which CI reads (stack-notes §2); skips are counted on the line before it, and the
// ten slowest files (with their wall-clock time) before that, so a slow file shows in every run.
// Use: `reporter:` in .taprc.
//
// Under `npm test` tap runs the test build (scripts/build-tests.mjs), so it names `.build/test/x.test.mjs`;
// a file's `# Subtest:` and `ok`/`not ok` lines are passed on with the source's name, `test/x.test.ts` (what
// is printed, the failed files, the slowest files and the times scripts/test.mjs records are all keyed by the
// source file). A failure's `at:` already names the `.ts` line (source maps); its `generated:` position and
// the rest stay as they are.
import { Transform } from 'node:stream';

/** A test file's line naming its built file: `ok 3 - .build/test/x.test.mjs …` → `ok 3 - test/x.test.ts …`. */
const BUILT_NAME = /^(\s*(?:(?:not )?ok \d+ - |# Subtest: ))(?:\.\/)?\.build\/(test\/\S+?)\.mjs(?=\s|$)/;
export const sourceNames = (line) => line.replace(BUILT_NAME, '$1$2.ts');

export default class SummaryReporter extends Transform {
  constructor() {
    super();
    this.tail = '';
    this.summary = null;
    this.failedFiles = [];
    this.fileTimes = [];
  }
  _transform(chunk, _enc, cb) {
    // Whole lines only, so that a name cut between two chunks is still renamed.
    const lines = (this.tail + chunk.toString()).split('\n').map(sourceNames);
    this.tail = lines.pop();
    for (const l of lines) this.scan(l);
    cb(null, lines.length ? `${lines.join('\n')}\n` : '');
  }
  scan(line) {
    const failed = /^not ok \d+ - (\S+\.test\.ts)/.exec(line);
    if (failed) this.failedFiles.push(failed[1]);
    const timed = /^(?:not )?ok \d+ - (\S+\.test\.ts) # time=([\d.]+)ms/.exec(line);
    if (timed) this.fileTimes.push({ file: timed[1], ms: Number(timed[2]) });
    if (!/^# \{ total: \d+.*\}$/.test(line)) return; // tap's root summary comment
    const get = (k) => Number((new RegExp(`\\b${k}: (\\d+)`).exec(line) || [0, 0])[1]);
    this.summary = { pass: get('pass'), fail: get('fail'), skip: get('skip') + get('todo') };
  }
  _flush(cb) {
    const tail = sourceNames(this.tail);
    if (tail) this.scan(tail);
    const s = this.summary ?? { pass: 0, fail: 1, skip: 0 }; // no summary => report a failure
    const slowest = [...this.fileTimes].sort((a, b) => b.ms - a.ms).slice(0, 10);
    const times = slowest.length ? `# slowest files: ${slowest.map((f) => `${f.file} ${(f.ms / 1000).toFixed(1)} s`).join(', ')}\n` : '';
    const files = this.failedFiles.length ? `# failed files: ${this.failedFiles.join(' ')}\n` : '';
    cb(null, `${tail}\n${times}${files}# ${s.skip} skipped\n${s.pass} passed, ${s.fail} failed\n`);
  }
}
