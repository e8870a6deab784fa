/** Search routes: message search and the pinned list (`POST /channels/:id/search`). */
import messageSearch from './messageSearch.ts';

export default [messageSearch];
