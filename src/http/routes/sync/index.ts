/** Sync routes (Stoat's `sync`): read state and synced client settings. */
import settingsFetch from './settingsFetch.ts';
import settingsSet from './settingsSet.ts';
import unreadsFetch from './unreadsFetch.ts';

export default [unreadsFetch, settingsFetch, settingsSet];
