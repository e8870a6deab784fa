/** Routes of webhooks: under /webhooks, and a channel's list and creation. */
import webhookCreate from './webhookCreate.ts';
import webhookDelete from './webhookDelete.ts';
import webhookDeleteToken from './webhookDeleteToken.ts';
import webhookEdit from './webhookEdit.ts';
import webhookEditToken from './webhookEditToken.ts';
import webhookExecute from './webhookExecute.ts';
import webhookFetch from './webhookFetch.ts';
import webhookFetchToken from './webhookFetchToken.ts';
import webhookGithub from './webhookGithub.ts';
import webhookList from './webhookList.ts';
import messageEdit from './messageEdit.ts';
import messageDelete from './messageDelete.ts';

export default [webhookCreate, webhookList, webhookFetch, webhookFetchToken, webhookEdit, webhookEditToken, webhookDelete, webhookDeleteToken, webhookExecute, webhookGithub, messageEdit, messageDelete];
