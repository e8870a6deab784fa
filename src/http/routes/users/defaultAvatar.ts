// GET /users/:user_id/default_avatar — the id's default avatar (PNG; public, cached, ETag / 304; never 404 for a valid id).
import { DefaultAvatars } from '../../../users/defaultAvatar.ts';
import { defineRoute } from '../../route.ts';
import { targetUserId } from './target.ts';

const avatars = new DefaultAvatars();

/** Stoat's header: the picture of an id never changes. */
export const AVATAR_CACHE_CONTROL = 'public, max-age=31536000, immutable';

export default defineRoute({
  method: 'GET',
  path: '/users/:user_id/default_avatar',
  auth: 'none',
  async handler({ ctx, caller, params }) {
    const id = targetUserId(params.user_id, caller);
    const { png, etag } = await avatars.get(id);
    ctx.set('ETag', etag);
    ctx.set('Cache-Control', AVATAR_CACHE_CONTROL);
    ctx.set('X-Content-Type-Options', 'nosniff');
    const match = ctx.get('If-None-Match');
    if (match && match.split(',').some((t) => t.trim().replace(/^W\//, '') === etag || t.trim() === '*')) {
      ctx.status = 304;
      return null;
    }
    ctx.status = 200;
    ctx.type = 'image/png';
    return png;
  },
});
