/**
 * Every read-model projection, in the order they run for an event. A feature adds its projection here.
 * `audit` runs before the projections whose state it reads as "before" (servers, channels): see its header.
 */
import { accountsProjection } from './accounts.ts';
import { auditProjection } from './audit.ts';
import { channelsProjection } from './channels.ts';
import { emojisProjection } from './emojis.ts';
import { filesProjection } from './files.ts';
import { messagesProjection } from './messages.ts';
import { moderationProjection } from './moderation.ts';
import { voiceProjection } from './voice.ts';
import { serversProjection } from './servers.ts';
import { unreadsProjection } from './unreads.ts';
import { settingsProjection } from './settings.ts';
import { relationshipsProjection } from './relationships.ts';
import { privateChannelsProjection } from './privateChannels.ts';
import { botsProjection } from './bots.ts';
import { webhooksProjection } from './webhooks.ts';
import type { Projection } from './types.ts';

export const PROJECTIONS: readonly Projection[] = [
  auditProjection,
  webhooksProjection,
  accountsProjection,
  serversProjection,
  channelsProjection,
  filesProjection,
  emojisProjection,
  messagesProjection,
  unreadsProjection,
  settingsProjection,
  relationshipsProjection,
  privateChannelsProjection,
  moderationProjection,
  voiceProjection,
  botsProjection,
];
