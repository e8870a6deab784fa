/**
 * Decisions about a stored file: pure functions of (command, state). Every refusal is 404 `NotFound`, like
 * Revolt's `find_and_use_attachment` (reference §7.3): an unknown, abandoned, already used, wrong-tag or
 * someone else's file all look the same, so a caller learns nothing about files that are not theirs.
 */
import { AppError } from '../../errors.ts';
import type { DomainEvent } from '../events.ts';
import type { Tag } from '../../../workers/media/policy.ts';
import type { FileReferencedBy, FileUsedFor } from './events.ts';
import { isServable, type FileRecord } from './state.ts';

/** Use a file once, under the tag the field requires, as its uploader. */
export interface AttachFile {
  /** The tag the field takes (`avatars` for an avatar …). */
  tag: Tag;
  /** The user asking to use it. */
  userId: string;
  /** What will use it. */
  usedFor: FileUsedFor;
}

/** Attaches a file: its uploader, its own tag, not used before; else 404 NotFound. */
export function decideAttach(state: FileRecord | null, cmd: AttachFile): DomainEvent[] {
  if (!state || state.tag !== cmd.tag || state.uploaderId !== cmd.userId || state.usedFor !== undefined) {
    throw new AppError({ type: 'NotFound' });
  }
  return [{ type: 'FileAttached', data: { usedFor: cmd.usedFor } }];
}

/** Reference a file without consuming it (masquerade avatar). */
export interface ReferenceFile {
  /** The tag the URL named (always `avatars` for a masquerade). */
  tag: Tag;
  /** The user asking. */
  userId: string;
  /** What references it. */
  by: FileReferencedBy;
}

/**
 * References a file: no event once it is servable (anyone may reuse a public URL, like a bridge does);
 * before that only its uploader may, and the first reference makes it servable. Else 404 NotFound.
 */
export function decideReference(state: FileRecord | null, cmd: ReferenceFile): DomainEvent[] {
  if (!state || state.tag !== cmd.tag) throw new AppError({ type: 'NotFound' });
  if (isServable(state)) return [];
  if (state.uploaderId !== cmd.userId) throw new AppError({ type: 'NotFound' });
  return [{ type: 'FileReferenced', data: { by: cmd.by } }];
}
