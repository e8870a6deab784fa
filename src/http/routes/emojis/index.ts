/** Custom emoji routes (reference §3.9). `POST /servers/:id/emojis` is deliberately not a route (spec: not the create call). */
import emojiCreate from './emojiCreate.ts';
import emojiDelete from './emojiDelete.ts';
import emojiEdit from './emojiEdit.ts';
import emojiFetch from './emojiFetch.ts';
import emojiList from './emojiList.ts';

export default [emojiCreate, emojiFetch, emojiEdit, emojiDelete, emojiList];
