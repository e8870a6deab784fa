/** CreateChannel: POST /servers/:id/channels (reference §3.5; voice per DESIGN §4 "voice"). */
import { AppError } from '../../errors.ts';
import { Permission } from '../../permissions/bits.ts';
import { require as requirePermission } from '../../permissions/calculate.ts';
import type { DomainEvent } from '../events.ts';
import type { ServerChannelObject } from '../models.ts';
import type { CallerContext } from './caller.ts';
import type { ServerView } from './state.ts';

/** Input of CreateChannel. */
export interface CreateChannel {
  channelId: string;
  type: 'Text' | 'Voice';
  name: string;
  description?: string | undefined;
  nsfw?: boolean | undefined;
  /** Voice settings; present (or `type: "Voice"`) makes a voice channel. */
  voice?: { max_users?: number | undefined } | undefined;
}

/** Context of CreateChannel: the caller and the instance's limits. */
export interface CreateChannelContext extends CallerContext {
  /** SERVER_CHANNEL_LIMIT. */
  channelLimit: number;
  /** VOICE_ENABLED. */
  voiceEnabled: boolean;
}

/** ManageChannel; a voice channel needs voice enabled (400 FeatureDisabled); at most `channelLimit` channels (400 TooManyChannels). */
export function decideCreateChannel(cmd: CreateChannel, view: ServerView, ctx: CreateChannelContext): DomainEvent[] {
  requirePermission(ctx.caller.permissions, Permission.ManageChannel);
  const isVoice = cmd.type === 'Voice' || cmd.voice !== undefined;
  if (isVoice && !ctx.voiceEnabled) throw new AppError({ type: 'FeatureDisabled', feature: 'voice' });
  if (view.server.channels.length >= ctx.channelLimit) throw new AppError({ type: 'TooManyChannels', max: ctx.channelLimit });
  const channel: ServerChannelObject = { channel_type: 'TextChannel', _id: cmd.channelId, server: view.server._id, name: cmd.name };
  if (cmd.description !== undefined) channel.description = cmd.description;
  if (cmd.nsfw) channel.nsfw = true;
  if (isVoice) channel.voice = cmd.voice?.max_users !== undefined ? { max_users: cmd.voice.max_users } : {};
  return [{ type: 'ChannelCreated', data: { channel } }];
}
