/** Message routes (reference §3.7, §3.9): send, history, fetch, edit, delete, bulk delete, pins, reactions. */
import messageBulkDelete from './messageBulkDelete.ts';
import messageDelete from './messageDelete.ts';
import messageEdit from './messageEdit.ts';
import messageFetch from './messageFetch.ts';
import { messagePin, messageUnpin } from './messagePin.ts';
import messageQuery from './messageQuery.ts';
import messageSend from './messageSend.ts';
import reactionAdd from './reactionAdd.ts';
import reactionClear from './reactionClear.ts';
import reactionRemove from './reactionRemove.ts';

export default [
  messageSend,
  messageQuery,
  messageFetch,
  messageEdit,
  messageDelete,
  messageBulkDelete,
  messagePin,
  messageUnpin,
  reactionAdd,
  reactionRemove,
  reactionClear,
];
