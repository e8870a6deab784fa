/** Schemas shared by several aggregates: Revolt's File object (reference §7.4) and small value types. */
import { z } from 'zod';

/** File metadata, tagged by `type` (reference §7.4). */
export const FileMetadata = z.discriminatedUnion('type', [
  z.object({ type: z.literal('File') }),
  z.object({ type: z.literal('Text') }),
  z.object({
    type: z.literal('Image'),
    width: z.number().int(),
    height: z.number().int(),
    animated: z.boolean().optional(),
  }),
  z.object({ type: z.literal('Video'), width: z.number().int().optional(), height: z.number().int().optional() }),
  z.object({ type: z.literal('Audio') }),
]);

/** A stored file as clients see it (`avatar`, `icon`, `attachments[]` …). */
export const FileObject = z.object({
  _id: z.string(),
  tag: z.string(),
  filename: z.string(),
  metadata: FileMetadata,
  content_type: z.string(),
  size: z.number().int().nonnegative(),
  deleted: z.boolean().optional(),
  reported: z.boolean().optional(),
  message_id: z.string().optional(),
  user_id: z.string().optional(),
  server_id: z.string().optional(),
  object_id: z.string().optional(),
});
/** A stored file. */
export type FileObject = z.infer<typeof FileObject>;

/** User presence values (Revolt). */
export const Presence = z.enum(['Online', 'Idle', 'Focus', 'Busy', 'Invisible']);
