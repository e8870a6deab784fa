// tap reporter: passes the raw TAP stream through and ends with one plain line
// `N passed, N failed`, which CI reads (stack-notes §2); skips are counted on the line before it.
// Use: `reporter:` in .taprc.
import { Transform } from 'node:stream';

export default class SummaryReporter extends Transform {
  constructor() {
    super();
    this.tail = '';
    this.summary = null;
    this.failedFiles = [];
  }
  _transform(chunk, _enc, cb) {
    const lines = (this.tail + chunk.toString()).split('\n');
    this.tail = lines.pop();
    for (const l of lines) this.scan(l);
    cb(null, chunk);
  }
  scan(line) {
    const failed = /^not ok \d+ - (\S+\.test\.ts)/.exec(line);
    if (failed) this.failedFiles.push(failed[1]);
    if (!/^# \{ total: \d+.*\}$/.test(line)) return; // tap's root summary comment
    const get = (k) => Number((new RegExp(`\\b${k}: (\\d+)`).exec(line) || [0, 0])[1]);
    this.summary = { pass: get('pass'), fail: get('fail'), skip: get('skip') + get('todo') };
  }
  _flush(cb) {
    if (this.tail) this.scan(this.tail);
    const s = this.summary ?? { pass: 0, fail: 1, skip: 0 }; // no summary => report a failure
    const files = this.failedFiles.length ? `# failed files: ${this.failedFiles.join(' ')}\n` : '';
    cb(null, `\n${files}# ${s.skip} skipped\n${s.pass} passed, ${s.fail} failed\n`);
  }
}
