// Arrays a client can store are bounded (issue 17 item 5): a server's categories (count, and channel ids across
// them) by the server channel limit; a member's roles and the role ranks by the role limit (Stoat's
// server_roles, 200); message attachments, embeds and replies by Stoat's 5 and interaction reactions by its 20.
// Each: N accepted, N+1 refused with Stoat's error type; a refused edit changes nothing.
import t from 'tap';
import { newId } from '../src/ids.ts';
import { ROLE_LIMIT } from '../src/http/routes/servers/roleCreate.ts';
import { signup } from './helpers/http.ts';
import { createServer } from './helpers/servers.ts';
import { startTestService } from './helpers/service.ts';

const LIMIT = 6;

t.test('bounded arrays', async (t) => {
  const s = await startTestService(t, { RATE_LIMITS: 'off', SERVER_CHANNEL_LIMIT: String(LIMIT) });
  const owner = await signup(s);
  const srv = await createServer(owner, 'Arrays');
  const S = `/servers/${srv.id}`;
  const refused = (r: { status: number; body: { type?: string } }, type: string) => [r.status, r.body.type, type];
  const cat = (i: number, channels: string[] = []) => ({ id: `c${i}`, title: `Category ${i}`, channels });

  t.test('categories: at most SERVER_CHANNEL_LIMIT, and as many channel ids across them', async (t) => {
    const ok = await owner.api.patch(S, { categories: Array.from({ length: LIMIT }, (_, i) => cat(i)) });
    t.equal(ok.status, 200, ok.text);
    t.equal(ok.body.categories.length, LIMIT, `${LIMIT} categories accepted`);
    const many = await owner.api.patch(S, { categories: Array.from({ length: LIMIT + 1 }, (_, i) => cat(i)) });
    t.same([many.status, many.body.type], [400, 'FailedValidation'], `${LIMIT + 1} refused`);
    const ids = [srv.general, ...Array.from({ length: LIMIT - 1 }, () => newId())];
    const spread = await owner.api.patch(S, { categories: [cat(0, ids.slice(0, 3)), cat(1, ids.slice(3))] });
    t.equal(spread.status, 200, `${LIMIT} channel ids across categories accepted`);
    t.same(spread.body.categories[0].channels, [srv.general], 'unknown ids dropped');
    const over = await owner.api.patch(S, { categories: [cat(0, ids.slice(0, 3)), cat(1, [...ids.slice(3), newId()])] });
    t.same([over.status, over.body.type], [400, 'FailedValidation'], `${LIMIT + 1} channel ids refused`);
    const huge = await owner.api.patch(S, { categories: Array.from({ length: 100_001 }, () => ({ id: "x", title: "y", channels: [] as string[] })) });
    t.ok([400, 413].includes(huge.status), `an enormous array is refused before any decision (${huge.status})`);
    t.equal((await owner.api.get(S)).body.categories.length, 2, 'refused edits changed nothing');
  });

  t.test('member roles and role ranks: at most the role limit', async (t) => {
    const fill = (n: number) => Array.from({ length: n }, () => newId());
    // N passes validation (and reaches the decision, which refuses unknown roles); N+1 does not.
    const roles = await owner.api.patch(`${S}/members/${owner.userId}`, { roles: fill(ROLE_LIMIT) });
    t.same([roles.status, roles.body.type], [404, 'InvalidRole'], `${ROLE_LIMIT} role ids reach the decision`);
    const tooMany = await owner.api.patch(`${S}/members/${owner.userId}`, { roles: fill(ROLE_LIMIT + 1) });
    t.same(refused(tooMany, 'FailedValidation').slice(0, 2), [400, 'FailedValidation'], `${ROLE_LIMIT + 1} refused`);
    const ranks = await owner.api.patch(`${S}/roles/ranks`, { ranks: fill(ROLE_LIMIT) });
    t.not(ranks.body.type, 'FailedValidation', `${ROLE_LIMIT} ranks pass validation (${ranks.status} ${ranks.body.type})`);
    const ranksOver = await owner.api.patch(`${S}/roles/ranks`, { ranks: fill(ROLE_LIMIT + 1) });
    t.same([ranksOver.status, ranksOver.body.type], [400, 'FailedValidation'], `${ROLE_LIMIT + 1} ranks refused`);
  });

  t.test('messages: replies, embeds 5; reactions 20', async (t) => {
    const M = `/channels/${srv.general}/messages`;
    const targets: string[] = [];
    for (let i = 0; i < 6; i++) targets.push((await owner.api.post(M, { content: `m${i}` })).body._id);
    const replies = (n: number) => targets.slice(0, n).map((id) => ({ id, mention: false }));
    t.equal((await owner.api.post(M, { content: 'r', replies: replies(5) })).status, 200, '5 replies');
    const r6 = await owner.api.post(M, { content: 'r', replies: replies(6) });
    t.same([r6.status, r6.body.type, r6.body.max], [400, 'TooManyReplies', 5]);
    const embeds = (n: number) => Array.from({ length: n }, (_, i) => ({ title: `e${i}` }));
    t.equal((await owner.api.post(M, { embeds: embeds(5) })).status, 200, '5 embeds');
    const e6 = await owner.api.post(M, { embeds: embeds(6) });
    t.same([e6.status, e6.body.type, e6.body.max], [400, 'TooManyEmbeds', 5]);
    const emoji = ['😀', '😁', '😂', '🤣', '😃', '😄', '😅', '😆', '😉', '😊', '😋', '😎', '😍', '😘', '🥰', '😗', '😙', '😚', '🙂', '🤗', '🤩'];
    t.equal((await owner.api.post(M, { content: 'x', interactions: { reactions: emoji.slice(0, 20) } })).status, 200, '20 reactions');
    const x21 = await owner.api.post(M, { content: 'x', interactions: { reactions: emoji } });
    t.same([x21.status, x21.body.type], [400, 'InvalidOperation'], '21 refused (Stoat has no TooManyReactions)');
    const x129 = await owner.api.post(M, { content: 'x', attachments: Array.from({ length: 129 }, () => newId()) });
    t.same([x129.status, x129.body.type], [400, 'FailedValidation'], 'an absurd attachment list is refused at validation');
  });
});
