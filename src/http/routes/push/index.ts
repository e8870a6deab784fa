/** Web Push routes (Stoat's `push`): a session's subscription. */
import subscribe from './subscribe.ts';
import unsubscribe from './unsubscribe.ts';

export default [subscribe, unsubscribe];
