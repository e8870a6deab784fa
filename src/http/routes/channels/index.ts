/** Channel routes for server channels (reference §3.6); message routes live with the messages feature. */
import channelDelete from './channelDelete.ts';
import channelEdit from './channelEdit.ts';
import channelFetch from './channelFetch.ts';
import defaultPermissionsSet from './defaultPermissionsSet.ts';
import inviteCreate from './inviteCreate.ts';
import joinCall from './joinCall.ts';
import rolePermissionsSet from './rolePermissionsSet.ts';
import channelAck from './channelAck.ts';
import endRing from './endRing.ts';

export default [channelFetch, channelEdit, channelDelete, defaultPermissionsSet, rolePermissionsSet, inviteCreate, joinCall, channelAck, endRing];
