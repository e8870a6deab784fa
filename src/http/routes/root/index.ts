/** The service root. */
import root from './root.ts';

export default [root];
