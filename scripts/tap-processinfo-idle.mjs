// Loaded first in every tap test process (`test-env` NODE_OPTIONS in .taprc): tells @tapjs/processinfo to
// record no module, in this process and every process it starts, then removes itself from NODE_OPTIONS so a
// child started in another directory does not look for it. tap loads processinfo into each test process and,
// through NODE_OPTIONS, into each of its children; by default it records every module loaded (reads the file
// again, counts its line lengths, posts it to the main thread) for coverage and `tap --changed`, which this
// suite does not use (`disable-coverage` in .taprc). Issue 40: 0.9 s of CPU per test process, 0.5 s per child.
process.env._TAPJS_PROCESSINFO_EXCLUDE_ = '/./';
const self = /(^|\s)"?--import=[^\s"]*tap-processinfo-idle\.mjs"?(?=\s|$)/g;
if (process.env.NODE_OPTIONS) process.env.NODE_OPTIONS = process.env.NODE_OPTIONS.replace(self, '').trim();
