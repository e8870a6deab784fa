/** Instance moderation routes (/admin/…): the report queue, sanctions, account deletion for abuse, content deletion, the instance audit log, the compliance export, legal holds, the retention policies. */
import auditLog from './auditLog.ts';
import complianceExport from './complianceExport.ts';
import holdCreate from './holdCreate.ts';
import holdLift from './holdLift.ts';
import holdList from './holdList.ts';
import messageDelete from './messageDelete.ts';
import retentionChannel from './retentionChannel.ts';
import retentionInstance from './retentionInstance.ts';
import retentionList from './retentionList.ts';
import retentionServer from './retentionServer.ts';
import reportEdit from './reportEdit.ts';
import reportFetch from './reportFetch.ts';
import reportList from './reportList.ts';
import serverDelete from './serverDelete.ts';
import userBan from './userBan.ts';
import userDelete from './userDelete.ts';
import userFetch from './userFetch.ts';
import userLift from './userLift.ts';
import userSuspend from './userSuspend.ts';

export default [reportList, reportFetch, reportEdit, userFetch, userSuspend, userBan, userDelete, userLift, messageDelete, auditLog, serverDelete, complianceExport, holdCreate, holdList, holdLift, retentionList, retentionInstance, retentionServer, retentionChannel];
