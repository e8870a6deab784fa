/** Every read-model projection, in the order they run for an event. A feature adds its projection here. */
import { accountsProjection } from './accounts.ts';
import { channelsProjection } from './channels.ts';
import { filesProjection } from './files.ts';
import { serversProjection } from './servers.ts';
import type { Projection } from './types.ts';

export const PROJECTIONS: readonly Projection[] = [accountsProjection, serversProjection, channelsProjection, filesProjection];
