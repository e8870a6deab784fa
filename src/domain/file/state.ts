/** A file's state (one `evolve`), kept as the read model `file:<id>` (projection `files`). */
import type { DomainEvent } from '../events.ts';
import type { FileObject } from '../shared.ts';
import type { Tag } from '../../../workers/media/policy.ts';
import type { FileUsedFor } from './events.ts';

/** A processed upload and what became of it. */
export interface FileRecord {
  /** The File object as clients see it. */
  file: FileObject;
  /** User id of the uploader. */
  uploaderId: string;
  /** Upload tag (also `file.tag`). */
  tag: Tag;
  /** Set once something consumed the file (use-once). */
  usedFor?: FileUsedFor;
  /** True once a masquerade referenced the file (servable, not consumed). */
  referenced?: boolean;
  /** Revision of the `file-<id>` stream this state reflects. */
  revision: number;
}

/** Applies one file-stream event. An abandoned upload has no state: its id never resolves. */
export function evolveFile(state: FileRecord | null, e: DomainEvent, revision: number): FileRecord | null {
  switch (e.type) {
    case 'FileUploaded':
      return { file: e.data.file, uploaderId: e.data.uploaderId, tag: e.data.file.tag as Tag, revision };
    case 'FileAttached':
      return state && { ...state, usedFor: e.data.usedFor, revision };
    case 'FileReferenced':
      return state && { ...state, referenced: true, revision };
    case 'FileExpired':
      return null;
    default:
      return state && { ...state, revision };
  }
}

/** Whether the media server may serve the file: something used or referenced it. */
export function isServable(state: FileRecord | null): boolean {
  return state !== null && (state.usedFor !== undefined || state.referenced === true);
}
