// GET /mod/:tag/:id/:filename — any stored file (unused, detached or replaced included) for an instance moderator's session; 404 for anyone else.
import { AppError } from '../../errors.ts';
import { loadFile } from '../../files.ts';
import { instanceRole } from '../../http/routes/admin/staff.ts';
import { isTag } from '../../../workers/media/policy.ts';
import type { MediaRoute } from '../route.ts';
import { sendBlob } from '../serve.ts';

const route: MediaRoute = {
  method: 'GET',
  path: '/mod/:tag/:id/:filename',
  // Stoat keeps this behind an admin key; here a staff session. Anyone else learns nothing: 404, not 401/403.
  auth: 'none',
  counted: true,
  params: { id: 'file' },
  async handle(ctx, deps, caller) {
    if (!caller || (await instanceRole(deps, caller.userId)) === null) throw new AppError({ type: 'NotFound' });
    const { tag, id, filename } = ctx.params as Record<string, string | undefined>;
    if (!tag || !id || !isTag(tag)) throw new AppError({ type: 'NotFound' });
    const record = await loadFile(deps, id);
    if (!record || record.tag !== tag) throw new AppError({ type: 'NotFound' });
    const { file } = record;
    if (filename !== file.filename && filename !== 'original') throw new AppError({ type: 'NotFound' });
    await sendBlob(ctx, deps.blobs.originalPath(file._id), {
      contentType: file.content_type,
      disposition: file.metadata.type === 'Image' ? 'inline' : 'attachment',
      filename: file.filename,
      etag: file._id,
    });
    // Evidence for a moderator, never for a shared cache.
    ctx.set('Cache-Control', 'private, no-store');
  },
};
export default route;
