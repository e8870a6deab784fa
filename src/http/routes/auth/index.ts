/** Account and session routes (Revolt's authifier shapes, reference §3.2). */
import accountCreate from './accountCreate.ts';
import accountDeleteConfirm from './accountDeleteConfirm.ts';
import accountDeleteStart from './accountDeleteStart.ts';
import accountDisable from './accountDisable.ts';
import accountExport from './accountExport.ts';
import accountReverify from './accountReverify.ts';
import accountVerify from './accountVerify.ts';
import emailChange from './emailChange.ts';
import passwordReset from './passwordReset.ts';
import passwordResetSend from './passwordResetSend.ts';
import accountFetch from './accountFetch.ts';
import passwordChange from './passwordChange.ts';
import sessionEdit from './sessionEdit.ts';
import sessionList from './sessionList.ts';
import sessionLogin from './sessionLogin.ts';
import sessionLogout from './sessionLogout.ts';
import sessionRevoke from './sessionRevoke.ts';
import sessionRevokeAll from './sessionRevokeAll.ts';

export default [
  accountCreate, accountFetch, passwordChange, sessionLogin, sessionLogout, sessionList, sessionRevokeAll, sessionRevoke, sessionEdit,
  accountVerify, accountReverify, passwordResetSend, passwordReset, emailChange, accountDisable, accountDeleteStart, accountDeleteConfirm,
  accountExport,
];
