// GET /:tag/:id/:filename — the stored original (filename must be the file's, or `original`).
import { AppError } from '../../errors.ts';
import type { MediaRoute } from '../route.ts';
import { sendBlob, servableFile } from '../serve.ts';

const route: MediaRoute = {
  method: 'GET',
  path: '/:tag/:id/:filename',
  auth: 'none',
  counted: false,
  params: { id: 'file' },
  async handle(ctx, deps) {
    const { file } = await servableFile(deps, ctx.params.tag, ctx.params.id);
    const asked = ctx.params.filename;
    if (asked !== file.filename && asked !== 'original') throw new AppError({ type: 'NotFound' });
    // Only what the pipeline decoded and re-encoded as a raster image is shown inline.
    const inline = file.metadata.type === 'Image';
    await sendBlob(ctx, deps.blobs.originalPath(file._id), {
      contentType: file.content_type,
      disposition: inline ? 'inline' : 'attachment',
      filename: file.filename,
      etag: file._id,
    });
  },
};
export default route;
