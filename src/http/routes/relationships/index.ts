/** Relationship routes (Stoat's `Relationships` tag): friend requests, blocks and mutual connections. */
import block from './block.ts';
import friendAdd from './friendAdd.ts';
import friendRemove from './friendRemove.ts';
import friendRequest from './friendRequest.ts';
import mutual from './mutual.ts';
import unblock from './unblock.ts';

export default [friendRequest, friendAdd, friendRemove, block, unblock, mutual];
