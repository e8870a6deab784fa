/** Every benchmark, in the order `npm run bench` runs them. A benchmark adds itself here. */
import type { Bench } from './lib.ts';
import append from './append.ts';
import upload from './upload.ts';

export const BENCHES: readonly Bench[] = [append, upload];
