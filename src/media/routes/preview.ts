// GET /:tag/:id — the WebP preview of a still image; anything else redirects (308) to the original.
import type { MediaRoute } from '../route.ts';
import { fileHeaders, sendBlob, servableFile } from '../serve.ts';

const route: MediaRoute = {
  method: 'GET',
  path: '/:tag/:id',
  auth: 'none',
  counted: false,
  params: { id: 'file' },
  async handle(ctx, deps) {
    const record = await servableFile(deps, ctx.params.tag, ctx.params.id);
    const { file } = record;
    if (file.metadata.type === 'Image' && !file.metadata.animated) {
      const name = file.filename.replace(/\.[^.]*$/, '') + '.webp';
      await sendBlob(ctx, deps.blobs.previewPath(file._id), { contentType: 'image/webp', disposition: 'inline', filename: name, etag: `${file._id}-preview` });
      return;
    }
    fileHeaders(ctx);
    ctx.status = 308;
    ctx.set('Location', `${deps.config.mediaPublicUrl}/${record.tag}/${file._id}/${encodeURIComponent(file.filename)}`);
    ctx.body = '';
  },
};
export default route;
