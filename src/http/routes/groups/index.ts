/** Group routes (Stoat's `Groups` tag); the group branches of PATCH / DELETE / permissions live in `private.ts`. */
import groupCreate from './groupCreate.ts';
import members from './members.ts';
import recipientAdd from './recipientAdd.ts';
import recipientRemove from './recipientRemove.ts';

export default [groupCreate, recipientAdd, recipientRemove, members];
