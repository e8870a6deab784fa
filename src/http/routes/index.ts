/** Every API route. A resource adds its `index.ts` here; `mountRoutes` orders literal segments first. */
import type { AnyRoute } from '../route.ts';
import auth from './auth/index.ts';
import channels from './channels/index.ts';
import emojis from './emojis/index.ts';
import invites from './invites/index.ts';
import messages from './messages/index.ts';
import mfa from './mfa/index.ts';
import onboard from './onboard/index.ts';
import root from './root/index.ts';
import search from './search/index.ts';
import servers from './servers/index.ts';
import users from './users/index.ts';
import sync from './sync/index.ts';
import push from './push/index.ts';
import relationships from './relationships/index.ts';
import dms from './dms/index.ts';
import groups from './groups/index.ts';
import safety from './safety/index.ts';
import policy from './policy/index.ts';
import admin from './admin/index.ts';
import livekit from './livekit/index.ts';
import bots from './bots/index.ts';
import webhooks from './webhooks/index.ts';

export const API_ROUTES: readonly AnyRoute[] = [...root, ...auth, ...onboard, ...users, ...servers, ...channels, ...invites, ...messages, ...emojis, ...sync, ...mfa, ...relationships, ...dms, ...groups, ...search, ...safety, ...policy, ...admin, ...livekit, ...push, ...bots, ...webhooks];
