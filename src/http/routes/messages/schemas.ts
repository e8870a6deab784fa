/**
 * Body schemas of the message routes (stoat-api `DataMessageSend`, `DataEditMessage`, `SendableEmbed`,
 * `Masquerade`, `ReplyIntent`, `Interactions`), strict, lengths in code points (DESIGN §4). Arrays are capped
 * well above the message limits only against abuse: the limits themselves (5 attachments, embeds, replies)
 * answer with their own error types (TooManyAttachments …) from the decision.
 */
import { z } from 'zod';
import { codepoints, nameText } from '../../../text.ts';
import { colour, idString } from '../../schemas.ts';

/** Longest array accepted before the decision sees it. */
const ARRAY_CAP = 128;

/** A text embed as sent (Revolt's field limits; `media` is the id of an `attachments` upload). */
export const SendableEmbed = z.strictObject({
  icon_url: codepoints(1, 256).nullish(),
  url: codepoints(1, 256).nullish(),
  title: codepoints(1, 100).nullish(),
  description: codepoints(1, 2000).nullish(),
  media: idString.nullish(),
  colour: colour.nullish(),
});

/** Embeds of a send or an edit. */
export const SendableEmbeds = z.array(SendableEmbed).max(ARRAY_CAP);

/** The masquerade of a send. */
export const Masquerade = z.strictObject({
  name: nameText(1, 32).nullish(),
  /** A URL of an `avatars` upload on this service's media server. */
  avatar: codepoints(1, 256).nullish(),
  colour: colour.nullish(),
});

/** POST /channels/:id/messages. */
export const SendBody = z.strictObject({
  /** Deprecated: acts as the idempotency key when the `Idempotency-Key` header is absent. */
  nonce: codepoints(1, 64).nullish(),
  content: codepoints(0, 2000).nullish(),
  attachments: z.array(idString).max(ARRAY_CAP).nullish(),
  replies: z
    .array(z.strictObject({ id: idString, mention: z.boolean(), fail_if_not_exists: z.boolean().nullish() }))
    .max(ARRAY_CAP)
    .nullish(),
  embeds: SendableEmbeds.nullish(),
  masquerade: Masquerade.nullish(),
  interactions: z
    .strictObject({ reactions: z.array(z.string().min(1).max(64)).max(ARRAY_CAP).nullish(), restrict_reactions: z.boolean().nullish() })
    .nullish(),
  flags: z.number().int().min(0).max(2 ** 32 - 1).nullish(),
});
/** A validated send body. */
export type SendBody = z.infer<typeof SendBody>;

/** PATCH /channels/:id/messages/:mid. */
export const EditBody = z.strictObject({
  content: codepoints(1, 2000).nullish(),
  embeds: SendableEmbeds.nullish(),
});

/** A sent embed without nulls. */
export function embedOf(e: z.infer<typeof SendableEmbed>) {
  return {
    icon_url: e.icon_url ?? undefined,
    url: e.url ?? undefined,
    title: e.title ?? undefined,
    description: e.description ?? undefined,
    media: e.media ?? undefined,
    colour: e.colour ?? undefined,
  };
}
