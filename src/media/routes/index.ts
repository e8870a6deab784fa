/** Every media server route (reference §7.1). There is no delete route: DELETE is 404 like any unknown path. */
import type { MediaDeps } from '../deps.ts';
import type { MediaRoute } from '../route.ts';
import modOriginal from './modOriginal.ts';
import original from './original.ts';
import preview from './preview.ts';
import root from './root.ts';
import { proxyRoute } from './proxy.ts';
import { embedRoute } from './embed.ts';
import { ImageProxy } from '../proxy.ts';
import { uploadRoutes } from './upload.ts';

/** The routes, literal paths first. */
export function mediaRoutes(deps: MediaDeps): MediaRoute[] {
  return [root, proxyRoute(new ImageProxy(deps.config)), embedRoute(deps), ...uploadRoutes(deps), modOriginal, preview, original];
}
