// GET /embed?url= — the link preview of one URL as an Embed (Stoat's January `embed`), {"type": "None"} when there is none.
import { AppError } from '../../errors.ts';
import { checkUrl, OutboundRefused } from '../../outbound/policy.ts';
import { previewOf, type PreviewContext } from '../../previews/generate.ts';
import type { MediaDeps } from '../deps.ts';
import { proxyTarget } from '../proxy.ts';
import type { MediaRoute } from '../route.ts';

/**
 * The route over the same preview code and per-URL cache as the preview worker. The URL must be http(s),
 * at most 2,048 characters, without credentials, and not an address the outbound policy refuses (400
 * `InvalidOperation`); a name that resolves to a refused address, like any page that cannot be fetched or
 * has nothing to show, answers `{"type": "None"}` (as January does).
 */
export function embedRoute(deps: MediaDeps): MediaRoute {
  const ctx: PreviewContext = { policy: deps.config.outbound, limits: deps.config.previews, redis: deps.readModels.redis, prefix: deps.config.redisPrefix };
  return {
    method: 'GET',
    path: '/embed',
    auth: 'none',
    counted: true,
    async handle(ctx2) {
      const url = proxyTarget(ctx2.query.url);
      try {
        checkUrl(url, ctx.policy);
      } catch (err) {
        if (err instanceof OutboundRefused) throw new AppError({ type: 'InvalidOperation' });
        throw err;
      }
      const embed = await previewOf(url, ctx);
      ctx2.set('Cache-Control', 'public, max-age=600');
      ctx2.body = embed ?? { type: 'None' };
    },
  };
}
