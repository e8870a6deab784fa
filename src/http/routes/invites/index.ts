/** Invite routes (reference §3.8). */
import inviteDelete from './inviteDelete.ts';
import inviteFetch from './inviteFetch.ts';
import inviteJoin from './inviteJoin.ts';

export default [inviteFetch, inviteJoin, inviteDelete];
