/** User routes (reference §3.4). */
import changeUsername from './changeUsername.ts';
import defaultAvatar from './defaultAvatar.ts';
import editSelf from './editSelf.ts';
import fetchFlags from './fetchFlags.ts';
import fetchProfile from './fetchProfile.ts';
import fetchSelf from './fetchSelf.ts';
import fetchUser from './fetchUser.ts';

export default [fetchSelf, fetchUser, editSelf, defaultAvatar, fetchProfile, fetchFlags, changeUsername];
