/** Onboarding routes (reference §3.3). */
import complete from './complete.ts';
import hello from './hello.ts';

export default [hello, complete];
