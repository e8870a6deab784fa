/** Server routes (reference §3.5): servers, their channels' creation, roles, permissions, members, bans, invites, audit log. */
import auditLogs from './auditLogs.ts';
import banCreate from './banCreate.ts';
import banList from './banList.ts';
import banRemove from './banRemove.ts';
import channelCreate from './channelCreate.ts';
import defaultPermissionsSet from './defaultPermissionsSet.ts';
import inviteList from './inviteList.ts';
import memberEdit from './memberEdit.ts';
import memberFetch from './memberFetch.ts';
import memberKick from './memberKick.ts';
import memberList from './memberList.ts';
import memberQuery from './memberQuery.ts';
import roleCreate from './roleCreate.ts';
import roleDelete from './roleDelete.ts';
import roleEdit from './roleEdit.ts';
import roleFetch from './roleFetch.ts';
import roleRanks from './roleRanks.ts';
import rolePermissionsSet from './rolePermissionsSet.ts';
import serverCreate from './serverCreate.ts';
import serverDelete from './serverDelete.ts';
import serverEdit from './serverEdit.ts';
import serverFetch from './serverFetch.ts';
import serverAck from './serverAck.ts';

export default [
  serverCreate,
  serverFetch,
  serverEdit,
  serverDelete,
  defaultPermissionsSet,
  rolePermissionsSet,
  channelCreate,
  roleCreate,
  roleFetch,
  roleEdit,
  roleDelete,
  roleRanks,
  memberList,
  memberQuery,
  memberFetch,
  memberEdit,
  memberKick,
  banCreate,
  banRemove,
  banList,
  inviteList,
  auditLogs,
  serverAck,
];
