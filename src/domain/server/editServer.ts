/** EditServer: name, description, icon, banner, categories, system messages, analytics and `remove` (reference §3.5). */
import { AppError } from '../../errors.ts';
import { Permission } from '../../permissions/bits.ts';
import { require as requirePermission } from '../../permissions/calculate.ts';
import type { DomainEvent } from '../events.ts';
import type { CategoryObject, SystemMessagesObject } from '../models.ts';
import type { FileObject } from '../shared.ts';
import type { CallerContext } from './caller.ts';
import type { ServerView } from './state.ts';

/** Default bound of `categories` when the context gives none (SERVER_CHANNEL_LIMIT's default). */
export const DEFAULT_CATEGORY_LIMIT = 200;

/** The caller, and the server channel limit that bounds categories. */
export interface EditServerContext extends CallerContext {
  /** SERVER_CHANNEL_LIMIT: at most this many categories, and this many channel ids across them. */
  channelLimit?: number;
  /** The caller is an instance admin (Stoat's privileged user): may set `flags` and `discoverable`. */
  privileged?: boolean;
}

/** Server flags an admin may set: Verified (1) and Official (2). */
const SERVER_FLAGS = 3;

/** Input of EditServer; absent fields are unchanged. */
export interface EditServer {
  name?: string | undefined;
  description?: string | undefined;
  /** The whole new categories array. */
  categories?: CategoryObject[] | undefined;
  system_messages?: SystemMessagesObject | undefined;
  analytics?: boolean | undefined;
  /** The new icon: an `icons` upload the route claimed (its `FileAttached` is appended with the edit). */
  icon?: FileObject | undefined;
  /** The new banner: a claimed `banners` upload. */
  banner?: FileObject | undefined;
  /** Privileged only (an instance admin; 403 NotPrivileged for anyone else): Stoat's server flags. */
  flags?: number | undefined;
  /** Privileged only. */
  discoverable?: boolean | undefined;
  remove: Array<'Description' | 'Categories' | 'SystemMessages' | 'Icon' | 'Banner'>;
}

/**
 * Revolt's order: an empty edit changes nothing; ManageServer for any of name, description, icon, banner,
 * system messages, analytics or `remove`; flags/discoverable need a privileged user; ManageChannel for categories; system
 * message channels must be the server's (404 NotFound); a channel in two categories → 400 InvalidOperation;
 * more categories, or more channel ids across them, than the server channel limit → 400 FailedValidation;
 * unknown channel ids are dropped from categories.
 */
export function decideEditServer(cmd: EditServer, view: ServerView, ctx: EditServerContext): DomainEvent[] {
  const { server } = view;
  const p = ctx.caller.permissions;
  const touchesServer =
    cmd.name !== undefined ||
    cmd.description !== undefined ||
    cmd.icon !== undefined ||
    cmd.banner !== undefined ||
    cmd.system_messages !== undefined ||
    cmd.analytics !== undefined ||
    cmd.remove.length > 0;
  if (!touchesServer && cmd.categories === undefined && cmd.flags === undefined && cmd.discoverable === undefined) return [];
  if (touchesServer) requirePermission(p, Permission.ManageServer);
  if ((cmd.flags !== undefined || cmd.discoverable !== undefined) && !ctx.privileged) throw new AppError({ type: 'NotPrivileged' });
  if (cmd.flags !== undefined && (cmd.flags < 0 || cmd.flags > SERVER_FLAGS)) throw new AppError({ type: 'FailedValidation', error: 'flags: only 1 (Verified) and 2 (Official)' });
  if (cmd.categories !== undefined) requirePermission(p, Permission.ManageChannel);

  const channels = new Set(server.channels);
  if (cmd.system_messages) {
    for (const id of Object.values(cmd.system_messages)) if (!channels.has(id)) throw new AppError({ type: 'NotFound' });
  }
  let categories: CategoryObject[] | undefined;
  if (cmd.categories) {
    // Bounded like the channels they group: a category per channel at most, each channel in one category.
    const limit = ctx.channelLimit ?? DEFAULT_CATEGORY_LIMIT;
    if (cmd.categories.length > limit) throw new AppError({ type: 'FailedValidation', error: `at most ${limit} categories` });
    const listed = cmd.categories.reduce((sum, c) => sum + c.channels.length, 0);
    if (listed > limit) throw new AppError({ type: 'FailedValidation', error: `at most ${limit} channels across categories` });
    const seen = new Set<string>();
    categories = cmd.categories.map((c) => {
      for (const id of c.channels) {
        if (seen.has(id)) throw new AppError({ type: 'InvalidOperation' });
        seen.add(id);
      }
      return { id: c.id, title: c.title, channels: c.channels.filter((id) => channels.has(id)) };
    });
  }
  const data: Extract<DomainEvent, { type: 'ServerEdited' }>['data']['data'] = {};
  if (cmd.name !== undefined) data.name = cmd.name;
  if (cmd.description !== undefined) data.description = cmd.description;
  if (categories !== undefined) data.categories = categories;
  if (cmd.system_messages !== undefined) data.system_messages = cmd.system_messages;
  if (cmd.analytics !== undefined) data.analytics = cmd.analytics;
  if (cmd.icon !== undefined) data.icon = cmd.icon;
  if (cmd.banner !== undefined) data.banner = cmd.banner;
  if (cmd.flags !== undefined) data.flags = cmd.flags;
  if (cmd.discoverable !== undefined) data.discoverable = cmd.discoverable;
  return [{ type: 'ServerEdited', data: { data, remove: [...new Set(cmd.remove)] } }];
}
