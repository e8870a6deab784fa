/**
 * Every read-model projection, in the order they run for an event. A feature adds its projection here.
 * `audit` and `fileUses` run before the projections whose state they read as "before" (accounts, servers,
 * channels, messages …): see their headers.
 */
import { accountsProjection } from './accounts.ts';
import { auditProjection } from './audit.ts';
import { channelsProjection } from './channels.ts';
import { emojisProjection } from './emojis.ts';
import { filesProjection } from './files.ts';
import { fileUsesProjection } from './fileUses.ts';
import { messagesProjection } from './messages.ts';
import { moderationProjection } from './moderation.ts';
import { holdsProjection } from './holds.ts';
import { voiceProjection } from './voice.ts';
import { serversProjection } from './servers.ts';
import { unreadsProjection } from './unreads.ts';
import { settingsProjection } from './settings.ts';
import { relationshipsProjection } from './relationships.ts';
import { privateChannelsProjection } from './privateChannels.ts';
import { botsProjection } from './bots.ts';
import { webhooksProjection } from './webhooks.ts';
import { retentionProjection } from './retention.ts';
import type { Projection } from './types.ts';

export const PROJECTIONS: readonly Projection[] = [
  auditProjection,
  // Before the projections keeping the state of the objects that use files (it reads their before-state).
  fileUsesProjection,
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
  holdsProjection,
  voiceProjection,
  botsProjection,
  retentionProjection,
];
