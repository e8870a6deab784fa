/**
 * Events of the channel aggregate: stream `channel-<channelId>` (settings and permission overrides of a
 * server channel), scope = the channel's server id. A channel's existence is recorded in its server's
 * stream (`ChannelCreated` / `ChannelDeleted`), so this stream starts empty.
 */
import { z } from 'zod';
import { FieldsChannel, OverrideField, VoiceObject } from '../models.ts';
import { FileObject } from '../shared.ts';

export const channelEvents = {
  /** Channel fields changed; `remove` cleared fields first (as in Revolt). */
  ChannelEdited: z.object({
    channelId: z.string(),
    data: z.object({
      name: z.string().optional(),
      description: z.string().optional(),
      /** The new icon (an `icons` upload, consumed by this edit). */
      icon: FileObject.optional(),
      nsfw: z.boolean().optional(),
      /** Makes the channel a voice channel (or changes its settings). */
      voice: VoiceObject.optional(),
      /** The slowmode delay in seconds (Stoat: 0 to 21600). */
      slowmode: z.number().int().min(0).optional(),
    }),
    remove: z.array(FieldsChannel),
  }),
  /** The channel's default override was replaced. */
  ChannelDefaultPermissionsSet: z.object({ channelId: z.string(), permissions: OverrideField }),
  /** A role's override in this channel was replaced. */
  ChannelRolePermissionsSet: z.object({ channelId: z.string(), roleId: z.string(), permissions: OverrideField }),
};
