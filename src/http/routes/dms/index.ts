/** Direct-message routes (Stoat's `Direct Messaging` tag): open a DM or Saved Notes, list them. */
import dmList from './dmList.ts';
import dmOpen from './dmOpen.ts';

export default [dmList, dmOpen];
