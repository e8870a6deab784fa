/** EditMessage: PATCH /channels/:id/messages/:mid (reference §3.7; DESIGN §4 "lengths", "content + embeds ceiling"). */
import { previewUrls } from '../../previews/urls.ts';
import { AppError } from '../../errors.ts';
import { Permission } from '../../permissions/bits.ts';
import { has, requireAll, require as requirePermission } from '../../permissions/calculate.ts';
import type { DomainEvent } from '../events.ts';
import type { FileObject } from '../shared.ts';
import { MESSAGE_LIMITS, bodyLength, toTextEmbed, type SendableEmbed } from './sendMessage.ts';
import type { TextEmbedObject } from './events.ts';
import type { MessageState } from './state.ts';
import { own } from '../../own.ts';

/** Input of EditMessage: the new content and/or embeds (absent = unchanged). */
export interface EditMessage {
  content?: string | undefined;
  embeds?: SendableEmbed[] | undefined;
}

/** Context of EditMessage. */
export interface EditMessageContext {
  userId: string;
  /** The caller's channel permission value. */
  permissions: bigint;
  /** ISO time of the edit. */
  now: string;
  /** Claimed embed media by id. */
  files: Readonly<Record<string, FileObject>>;
}

/** The embed media ids an edit claims. */
export function editFileIds(cmd: EditMessage): string[] {
  return (cmd.embeds ?? []).flatMap((e) => (e.media === undefined ? [] : [e.media]));
}

/**
 * ViewChannel and SendMessage; only the author edits (403 CannotEditMessage); SendEmbeds for embeds,
 * UploadFiles for embed media; at most 5 embeds; the edited message must fit the body ceiling (422
 * PayloadTooLarge). Needs no files, so a route runs it before claiming embed media.
 */
export function checkEditMessage(cmd: EditMessage, message: MessageState, ctx: Omit<EditMessageContext, 'files' | 'now'>): void {
  requireAll(ctx.permissions, Permission.ViewChannel, Permission.SendMessage);
  if (message.author !== ctx.userId) throw new AppError({ type: 'CannotEditMessage' });
  if (cmd.embeds !== undefined && cmd.embeds.length > 0) requirePermission(ctx.permissions, Permission.SendEmbeds);
  if (editFileIds(cmd).length > 0) requirePermission(ctx.permissions, Permission.UploadFiles);
  if (cmd.embeds !== undefined && cmd.embeds.length > MESSAGE_LIMITS.embeds) throw new AppError({ type: 'TooManyEmbeds', max: MESSAGE_LIMITS.embeds });
  const content = cmd.content ?? message.content;
  const embeds = cmd.embeds ?? textEmbeds(message);
  if (bodyLength(content, embeds) > MESSAGE_LIMITS.bodyCeiling) throw new AppError({ type: 'PayloadTooLarge' });
}

/** The sender's own (Text) embeds of a message, without its link previews. */
export function textEmbeds(message: Pick<MessageState, 'embeds'>): TextEmbedObject[] {
  return (message.embeds ?? []).filter((e): e is TextEmbedObject => e.type === 'Text');
}

/** Checks the edit (`checkEditMessage`) and returns `MessageEdited`; an edit that changes nothing appends nothing. */
export function decideEditMessage(cmd: EditMessage, message: MessageState, ctx: EditMessageContext): DomainEvent[] {
  checkEditMessage(cmd, message, ctx);
  if (cmd.content === undefined && cmd.embeds === undefined) return [];
  const data: { content?: string; embeds?: ReturnType<typeof toTextEmbed>[] } = {};
  if (cmd.content !== undefined) data.content = cmd.content;
  // New content drops the old content's link previews (they are generated again, as in Stoat).
  if (cmd.content !== undefined && cmd.embeds === undefined && (message.embeds ?? []).some((e) => e.type !== 'Text')) data.embeds = textEmbeds(message);
  if (cmd.embeds !== undefined) {
    data.embeds = cmd.embeds.map((e) =>
      toTextEmbed(e, (id) => {
        const f = own(ctx.files, id);
        if (!f) throw new AppError({ type: 'NotFound' });
        return f;
      }),
    );
  }
  // New content gets new link previews (the worker's, from this event) when the author may embed.
  const previews = cmd.content !== undefined && has(ctx.permissions, Permission.SendEmbeds) && previewUrls(cmd.content).length > 0;
  return [{ type: 'MessageEdited', data: { channel: message.channel, data, edited: ctx.now, ...(previews ? { previews: true as const } : {}) } }];
}
