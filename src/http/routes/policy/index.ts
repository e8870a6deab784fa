/** Policy routes (Stoat's `policy`): acknowledging the operator's policy changes. */
import acknowledge from './acknowledge.ts';

export default [acknowledge];
