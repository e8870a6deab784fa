/** User routes (reference §3.4). */
import editSelf from './editSelf.ts';
import fetchSelf from './fetchSelf.ts';
import fetchUser from './fetchUser.ts';

export default [fetchSelf, fetchUser, editSelf];
