/** LiveKit's webhooks. */
import webhook from './webhook.ts';

export default [webhook];
