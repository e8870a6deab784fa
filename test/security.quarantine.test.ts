/**
 * Attack review item 13: a poison event (a projection throws on it) is quarantined instead of stalling its
 * partition forever: logged, recorded durably with its id, position and error, counted (`quarantinedCount`,
 * the health command) — and projecting goes on. A rebuild skips and records it the same way.
 */
import t from 'tap';
import { PROJECTIONS } from '../projections/index.ts';
import { quarantineEvents, quarantinedCount, quarantinedEvents, type QuarantinedEvent } from '../projections/quarantine.ts';
import type { Projection } from '../projections/types.ts';
import { rebuild } from '../projections/rebuild.ts';
import { createLogger } from '../src/log.ts';
import { generationPrefix, genKeys } from '../src/readmodel/keys.ts';
import { deletePrefix, startTestService, uniquePrefix } from './helpers/service.ts';
import { signup } from './helpers/http.ts';
import { createServer, dumpCurrent, dumpGeneration } from './helpers/servers.ts';

/** Injected fault: throws on any message whose content is "poison". */
const poisonous: Projection = {
  name: 'poisonous',
  handles: ['MessageSent'],
  async apply(e) {
    const content = (e.data as { message?: { content?: string } }).message?.content;
    if (content === 'poison') throw new Error('injected failure');
  },
};

t.test('a poison event is quarantined and projecting goes on; a rebuild does the same', async (t) => {
  const projections = [...PROJECTIONS, poisonous];
  const s = await startTestService(t, { RATE_LIMITS: 'off' }, { projections });
  const seen: QuarantinedEvent[] = [];
  const listener = (q: QuarantinedEvent) => seen.push(q);
  quarantineEvents.on('quarantined', listener);
  t.teardown(() => void quarantineEvents.off('quarantined', listener));
  const owner = await signup(s);
  const server = await createServer(owner);
  const C = `/channels/${server.general}/messages`;

  const before = await owner.api.post(C, { content: 'before' });
  t.equal(before.status, 200);
  const poison = await owner.api.post(C, { content: 'poison' }, { skipOpenApi: true });
  t.not(poison.status, 500, `the poisoned send answers (${poison.status})`);
  const after = await owner.api.post(C, { content: 'after' });
  t.equal(after.status, 200, 'a later send is projected: the partition did not stall');
  const history = await owner.api.get(`${C}?limit=10`);
  t.same(history.body.map((m: { content: string }) => m.content).sort(), ['after', 'before'], 'the poison event\'s writes were dropped, the others kept');

  t.equal(await quarantinedCount(s.redis, s.prefix, s.config.projectorPartitions), 1, 'quarantinedCount: 1');
  const [q] = await quarantinedEvents(s.redis, s.prefix, s.config.projectorPartitions);
  t.match(q, { type: 'MessageSent', projection: 'poisonous', error: 'injected failure' }, 'recorded with type, projection and error');
  t.ok(q!.eventId && q!.position && q!.stream.startsWith('message-'), 'and the event id, position and stream');
  t.same(seen.map((x) => x.eventId), [q!.eventId], 'announced once on quarantineEvents');

  // Rebuild from zero with the same projections: the same event is skipped and recorded again.
  const target = uniquePrefix();
  t.teardown(() => deletePrefix(s.config.redisUrl, target));
  const r = await rebuild({ store: s.store, redisUrl: s.config.redisUrl, prefix: s.prefix, targetPrefix: target, partitions: s.config.projectorPartitions, projections, log: createLogger('silent'), swap: false });
  const rebuilt = await dumpGeneration(s.redis, generationPrefix(target, r.generation));
  const live = await dumpCurrent(s.redis, s.prefix);
  t.same(rebuilt, live, 'rebuild equals live (the quarantine record included)');
  const qKeys = Object.keys(live).filter((k) => k.includes('quarantine:'));
  t.equal(qKeys.length, 1, `the record is a read-model key of the generation (${genKeys.quarantine(s.config.projectorPartitions, 0).split(':')[0]})`);
});
