/** Routes under /bots. */
import botCreate from './botCreate.ts';
import botDelete from './botDelete.ts';
import botEdit from './botEdit.ts';
import botFetch from './botFetch.ts';
import botInvite from './botInvite.ts';
import botPublic from './botPublic.ts';
import botsOwned from './botsOwned.ts';

export default [botCreate, botsOwned, botFetch, botEdit, botDelete, botPublic, botInvite];
