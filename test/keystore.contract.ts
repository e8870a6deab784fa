/**
 * The one contract suite every key store adapter passes (see `src/personal/keyStore.ts`): keys created once
 * and agreed on by concurrent openers, lookups that never create, destruction that is final, idempotent,
 * shared by every opener and survives a reopen, whose key bytes leave the storage, and service secrets.
 *
 * `site()` gives one storage: `open()` opens another handle on it (another process's view), `holds(bytes)`
 * says whether the raw storage still contains those bytes, `cleanup()` removes it.
 */
import type * as Tap from 'tap';
import type { KeyStore } from '../src/personal/keyStore.ts';

/** One storage a key store adapter runs on. */
export interface KeyStoreSite {
  /** Opens a handle on the storage (each call: a new connection or file handle, as another process would). */
  open(): Promise<KeyStore>;
  /** True while the raw storage (file, table pages) still contains `bytes`. */
  holds(bytes: Buffer): Promise<boolean>;
  cleanup(): Promise<void>;
}

/** Runs the key store contract against `site()` (a fresh storage per subtest). */
export async function keyStoreContract(t: Tap.Test, name: string, site: () => Promise<KeyStoreSite>): Promise<void> {
  const withSite = async (t: Tap.Test): Promise<KeyStoreSite> => {
    const s = await site();
    const opened: KeyStore[] = [];
    t.teardown(async () => {
      for (const k of opened) await k.close();
      await s.cleanup();
    });
    return {
      ...s,
      open: async () => {
        const k = await s.open();
        opened.push(k);
        return k;
      },
    };
  };

  t.test(`${name}: a key is created once, 32 random bytes, and kept`, async (t) => {
    const s = await withSite(t);
    const keys = await s.open();
    t.equal(await keys.lookup('a'), null, 'lookup of an unknown subject: null');
    t.equal(await keys.lookup('a'), null, 'and lookup did not create one');
    t.notOk(await keys.destroyed('a'), 'an unknown subject is not destroyed');
    const a = await keys.keyFor('a');
    t.ok(Buffer.isBuffer(a) && a.length === 32, '32 bytes');
    t.same(await keys.keyFor('a'), a, 'keyFor again: the same key');
    t.same(await keys.lookup('a'), a, 'lookup: the same key');
    const b = await keys.keyFor('b');
    t.notSame(b, a, 'another subject: another key');
    await keys.close();
    const again = await s.open();
    t.same(await again.lookup('a'), a, 'kept across a reopen');
    t.same(await again.keyFor('b'), b);
  });

  t.test(`${name}: two openers creating the same subject's key at once agree on one key`, async (t) => {
    const s = await withSite(t);
    const [one, two] = await Promise.all([s.open(), s.open()]);
    for (let i = 0; i < 20; i++) {
      const [x, y] = await Promise.all([one.keyFor(`race-${i}`), two.keyFor(`race-${i}`)]);
      t.ok(x && y && x.equals(y), `subject ${i}: one key`);
    }
  });

  t.test(`${name}: destruction is final, idempotent, seen by every opener and survives a reopen`, async (t) => {
    const s = await withSite(t);
    const [one, two] = await Promise.all([s.open(), s.open()]);
    const key = (await one.keyFor('victim'))!;
    const other = (await one.keyFor('bystander'))!;
    t.same(await two.lookup('victim'), key, 'the other opener reads the key');
    await one.destroy('victim');
    t.equal(await one.keyFor('victim'), null, 'keyFor after destruction: null, no new key');
    t.equal(await one.lookup('victim'), null);
    t.ok(await one.destroyed('victim'));
    t.equal(await two.keyFor('victim'), null, 'the other opener: null too');
    t.ok(await two.destroyed('victim'));
    await two.destroy('victim');
    t.ok(await two.destroyed('victim'), 'destroying twice is fine');
    t.same(await one.lookup('bystander'), other, 'another subject keeps its key');
    await one.destroy('never-had-one');
    t.ok(await one.destroyed('never-had-one'), 'a subject destroyed before it had a key is destroyed');
    t.equal(await two.keyFor('never-had-one'), null, 'and never gets one');
    await one.close();
    await two.close();
    const reopened = await s.open();
    t.equal(await reopened.keyFor('victim'), null, 'still destroyed after a reopen');
    t.ok(await reopened.destroyed('victim'));
    t.same(await reopened.lookup('bystander'), other);
  });

  t.test(`${name}: a destroyed key's bytes leave the storage`, async (t) => {
    const s = await withSite(t);
    const keys = await s.open();
    // Neighbours before and after, so the key sits in the middle of its page or file.
    for (let i = 0; i < 40; i++) await keys.keyFor(`before-${i}`);
    const key = (await keys.keyFor('victim'))!;
    for (let i = 0; i < 40; i++) await keys.keyFor(`after-${i}`);
    const kept = (await keys.keyFor('after-7'))!;
    t.ok(await s.holds(key), 'the key is in the storage before');
    await keys.destroy('victim');
    t.notOk(await s.holds(key), 'and gone after its destruction');
    t.ok(await s.holds(kept), 'other keys are still there (the check can see keys)');
  });

  t.test(`${name}: service secrets are created once with the asked length and shared`, async (t) => {
    const s = await withSite(t);
    const [one, two] = await Promise.all([s.open(), s.open()]);
    const [x, y] = await Promise.all([one.serviceSecret('master', 32), two.serviceSecret('master', 32)]);
    t.equal(x.length, 32);
    t.same(x, y, 'both openers get the one secret');
    t.same(await one.serviceSecret('master', 32), x, 'kept');
    const v = await two.serviceSecret('vapid-private-key', 48);
    t.equal(v.length, 48, 'the asked length');
    t.notSame(v.subarray(0, 32), x, 'another name: another secret');
    await one.close();
    const again = await s.open();
    t.same(await again.serviceSecret('master', 32), x, 'kept across a reopen');
  });

  t.test(`${name}: the live subjects of a prefix, in order, without destroyed or other keys (retention buckets)`, async (t) => {
    const s = await withSite(t);
    const [one, two] = await Promise.all([s.open(), s.open()]);
    for (const subject of ['content:B:000000000002000:1000', 'content:A:000000000001000:1000', 'content:A:000000000000000:1000', 'contentx', 'file:f1', '01ARZ3NDEKTSV4RRFFQ69G5FAV']) {
      await one.keyFor(subject);
    }
    await one.lookup('content:C:000000000000000:1000');
    t.same(await two.liveSubjects('content:'), ['content:A:000000000000000:1000', 'content:A:000000000001000:1000', 'content:B:000000000002000:1000'], 'only that prefix, in order; a lookup creates nothing');
    await two.destroy('content:A:000000000001000:1000');
    t.same(await one.liveSubjects('content:'), ['content:A:000000000000000:1000', 'content:B:000000000002000:1000'], 'a destroyed key is not live');
    t.same(await one.liveSubjects('content:A:'), ['content:A:000000000000000:1000']);
    t.same(await one.liveSubjects('nothing'), []);
    t.same(await one.liveSubjects('%'), [], 'the prefix is text, not a pattern');
  });
}
