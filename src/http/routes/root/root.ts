// GET / — the service root (RevoltConfig), DESIGN §4 "root".
import { LIVEKIT_NODE } from '../../../voice/token.ts';
import { defineRoute } from '../../route.ts';

/** The version of the interface this service implements (spec "Versioning"). */
export const REVOLT_VERSION = '0.15.7';

export default defineRoute({
  method: 'GET',
  path: '/',
  auth: 'none',
  async handler({ deps }) {
    const c = deps.config;
    const voice = c.voice;
    return {
      revolt: REVOLT_VERSION,
      features: {
        captcha: { enabled: c.captcha !== undefined, key: c.captcha?.siteKey ?? '' },
        email: c.email !== undefined,
        invite_only: c.inviteOnly,
        autumn: { enabled: true, url: c.mediaPublicUrl },
        // Link previews and the image proxy (`<url>/proxy?url=`) are served by the media server.
        january: { enabled: true, url: c.mediaPublicUrl },
        voso: { enabled: false, url: '', ws: '' },
        // `voice` for the spec, `livekit` for stoat.js: one node, the LIVEKIT_URL that join_call hands out.
        voice: { enabled: voice.enabled },
        livekit: { enabled: voice.enabled, nodes: voice.enabled ? [{ name: LIVEKIT_NODE, lat: 0, lon: 0, public_url: voice.url }] : [] },
      },
      ws: c.wsPublicUrl,
      app: c.appUrl,
      vapid: deps.vapid?.publicKey ?? '',
      build: {
        commit_sha: process.env.BUILD_COMMIT_SHA ?? '<failed to generate>',
        commit_timestamp: process.env.BUILD_COMMIT_TIMESTAMP ?? '<failed to generate>',
        semver: REVOLT_VERSION,
        origin_url: 'https://github.com/stoatchat/stoatchat',
        timestamp: process.env.BUILD_TIMESTAMP ?? '<failed to generate>',
      },
    };
  },
});
