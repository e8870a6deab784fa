/**
 * Every fact a send needs, gathered in one loader beside the decision (`decideSendMessage`), so a send
 * reads route → facts → decide → append. One round of independent reads (reply targets, usable files, the
 * masquerade avatar, the slowmode slot; auto-pipelined into one Redis round trip), then what depends on the
 * reply targets (which mentioned users can see the channel; the audience of a mass mention). An ordinary
 * send (no replies, mentions, files or slowmode) reads nothing here beyond the access it was given.
 *
 * The loader refuses nothing: an unusable file or avatar is a missing fact, and the decision refuses it in
 * its place in Stoat's order (a 403 for the body is never hidden behind a 404 for a file).
 */
import type { AnyChannelAccess } from '../../../access.ts';
import type { Write } from '../../../commands.ts';
import { AppError } from '../../../errors.ts';
import { claimFile, referenceFile } from '../../../files.ts';
import type { MemberObject } from '../../../domain/models.ts';
import { fileIdsOf, slowmodeFor, type SendFacts, type SendMessage } from '../../../domain/message/sendMessage.ts';
import { recipientsOf } from '../../../domain/private/state.ts';
import { channelPermissionsOf } from '../../../domain/server/permissions.ts';
import type { FileObject } from '../../../domain/shared.ts';
import { own, setOwn } from '../../../own.ts';
import { Permission } from '../../../permissions/bits.ts';
import { has } from '../../../permissions/calculate.ts';
import { claimSlowmode } from '../../../ratelimit/slowmode.ts';
import { rm } from '../../../readmodel/keys.ts';
import { loadMessages } from '../../../readmodel/messages.ts';
import type { AppDeps } from '../../deps.ts';
import { loadAudience } from './audience.ts';

/** What the loader gathered: the facts, and the file writes to append with the message if it is sent. */
export interface LoadedSend {
  facts: SendFacts;
  /** `FileAttached` / `FileReferenced` writes of the usable files and avatar. */
  writes: Write[];
  /** The slowmode slot this send took (seconds), to give back when it appends nothing; 0 when none was taken. */
  slowmodeTaken: number;
}

/** Options of the loader. */
export interface SendFactOptions {
  /** Whose uploads the files are (the sender; a webhook's creator). */
  uploader: string;
  /** Whether the channel's slowmode applies (users and bots; Stoat's webhooks are not slowed). */
  slowmode: boolean;
}

/** A unusable file is a missing fact (the decision says 404 in its turn); any other failure propagates. */
async function orMissing<T>(p: Promise<T>): Promise<T | undefined> {
  try {
    return await p;
  } catch (err) {
    if (err instanceof AppError && err.body.type === 'NotFound') return undefined;
    throw err;
  }
}

/** Gathers the facts of `cmd` in the channel `access` gives. */
export async function loadSendFacts(deps: AppDeps, cmd: SendMessage, access: AnyChannelAccess, o: SendFactOptions): Promise<LoadedSend> {
  const replyIds = [...new Set(cmd.replies.map((r) => r.id))];
  const fileIds = [...new Set(fileIdsOf(cmd))];
  const avatarUrl = cmd.masquerade?.avatar;
  const slowmode = o.slowmode && access.kind === 'server' ? slowmodeFor(access.channel.slowmode, access.permissions) : 0;
  const usedFor = { type: 'Message', id: cmd.messageId } as const;

  const [targets, claims, avatar, waitMs] = await Promise.all([
    replyIds.length === 0 ? [] : loadMessages(deps.readModels, cmd.channelId, replyIds),
    Promise.all(fileIds.map((fileId) => orMissing(claimFile(deps, { fileId, tag: 'attachments', userId: o.uploader, usedFor })))),
    avatarUrl === undefined ? undefined : orMissing(referenceFile(deps, { url: avatarUrl, userId: o.uploader, by: usedFor })),
    slowmode === 0
      ? 0
      : claimSlowmode(deps.readModels.redis, deps.config.redisPrefix, { userId: cmd.authorId, channelId: cmd.channelId, seconds: slowmode, token: cmd.messageId, now: deps.now() }),
  ]);

  const replies: Record<string, { author: string } | null> = {};
  replyIds.forEach((id, i) => setOwn(replies, id, targets[i] ? { author: targets[i]!.author } : null));
  const files: Record<string, FileObject> = {};
  const writes: Write[] = [];
  fileIds.forEach((id, i) => {
    const c = claims[i];
    if (!c) return;
    setOwn(files, id, c.file);
    writes.push(c.write);
  });
  if (avatar?.write) writes.push(avatar.write);

  // Mentions count only for members who can see the channel: the content's and the replied authors'.
  const candidates = new Set(cmd.mentions.users);
  for (const r of cmd.replies) if (r.mention && own(replies, r.id)) candidates.add(own(replies, r.id)!.author);
  const ids = [...candidates];
  const [members, audience] = await Promise.all([
    access.kind === 'server' && ids.length > 0 ? deps.readModels.hmgetJson<MemberObject>(rm.serverMembers(access.server._id), ids) : [],
    loadAudience(deps, access, cmd.mentions),
  ]);
  const canView: Record<string, boolean> = {};
  if (access.kind === 'server') {
    const now = deps.now();
    ids.forEach((id, i) => {
      const m = members[i];
      setOwn(canView, id, m !== null && m !== undefined && has(channelPermissionsOf(access.server, id, m, access.channel, now), Permission.ViewChannel));
    });
  } else {
    // In a private channel the recipients see everything.
    const recipients = new Set(recipientsOf(access.channel));
    for (const id of ids) setOwn(canView, id, recipients.has(id));
  }

  const facts: SendFacts = {
    permissions: access.permissions,
    roles: new Set(access.kind === 'server' ? Object.keys(access.server.roles) : []),
    replies,
    canView,
    files,
    emojis: new Set(access.kind === 'server' ? (access.server.emojis ?? []) : []),
    audience,
  };
  if (avatarUrl !== undefined) facts.avatar = avatar !== undefined;
  if (slowmode > 0) facts.slowmode = { seconds: slowmode, waitMs };
  return { facts, writes, slowmodeTaken: slowmode > 0 && waitMs === 0 ? slowmode : 0 };
}
