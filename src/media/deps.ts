/** What the media app needs: the API's dependencies, the blob directory and the upload queues. */
import type { AppDeps } from '../http/deps.ts';
import type { BlobStore } from './blobs.ts';
import type { UploadQueues } from './uploads.ts';

/** Dependencies of the media app. */
export interface MediaDeps extends AppDeps {
  /** Blobs under `DATA_DIR/files`. */
  blobs: BlobStore;
  /** The per-tag queues an upload is processed through. */
  uploads: Pick<UploadQueues, 'process'>;
}
