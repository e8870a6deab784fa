/** Routes under /safety. */
import reportContent from './reportContent.ts';

export default [reportContent];
