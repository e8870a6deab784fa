/** Account and session routes (Revolt's authifier shapes, reference §3.2). */
import accountCreate from './accountCreate.ts';
import accountFetch from './accountFetch.ts';
import passwordChange from './passwordChange.ts';
import sessionEdit from './sessionEdit.ts';
import sessionList from './sessionList.ts';
import sessionLogin from './sessionLogin.ts';
import sessionLogout from './sessionLogout.ts';
import sessionRevoke from './sessionRevoke.ts';
import sessionRevokeAll from './sessionRevokeAll.ts';

export default [accountCreate, accountFetch, passwordChange, sessionLogin, sessionLogout, sessionList, sessionRevokeAll, sessionRevoke, sessionEdit];
