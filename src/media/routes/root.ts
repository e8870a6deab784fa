// GET / — the file server's greeting (reference §7.1).
import { REVOLT_VERSION } from '../../http/routes/root/root.ts';
import type { MediaRoute } from '../route.ts';

const route: MediaRoute = {
  method: 'GET',
  path: '/',
  auth: 'none',
  counted: false,
  async handle(ctx) {
    ctx.body = { autumn: 'Hello, I am a file server!', version: REVOLT_VERSION };
  },
};
export default route;
