// Loaded first in every tap test process (`test-env` NODE_OPTIONS in .taprc) and in every process a test starts:
// keeps @tapjs/processinfo from recording modules. tap loads processinfo into each test process and, through
// NODE_OPTIONS, into each of its children; by default it records every module loaded (reads the file again,
// counts its line lengths, posts it to the main thread) for coverage and `tap --changed`, which this suite does
// not use (`disable-coverage` in .taprc). Issue 40: 0.9 s of CPU per test process, 0.5 s per child.
//
// - `_TAPJS_PROCESSINFO_EXCLUDE_=/./`: no module is recorded (processinfo's `require` hook and the files it
//   would be sent).
// - processinfo's module hook is not registered at all: recording nothing, it still put every `import` of the
//   process through Node 20's hooks thread (a round trip per module resolved and loaded): importing the built
//   service took ~2.8 s of CPU with it and ~1.7 s without (issue 40, the test build). What it would have
//   posted is nothing, as above; tap's runner gets the same (empty) process info.
// - It stays first in NODE_OPTIONS (as an absolute URL, so that a child started in another directory finds it),
//   so processinfo, which adds its own `--import` after it, finds the same in every child.
import module from 'node:module';

process.env._TAPJS_PROCESSINFO_EXCLUDE_ = '/./';

const register = module.register;
module.register = function registerUnlessProcessinfo(specifier, ...rest) {
  if (String(specifier).includes('/@tapjs/processinfo/')) return undefined;
  return register.call(this, specifier, ...rest);
};

const self = /(^|\s)"?--import=[^\s"]*tap-processinfo-idle\.mjs"?(?=\s|$)/;
if (process.env.NODE_OPTIONS) process.env.NODE_OPTIONS = process.env.NODE_OPTIONS.replace(self, `$1--import=${import.meta.url}`).trim();
