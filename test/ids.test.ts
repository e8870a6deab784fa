// Ids: ULIDs (monotonic within the process, any seed time) with cryptographic randomness.
import t from 'tap';
import { decodeTime } from 'ulid';
import { isUlid, newId, ulidTime } from '../src/ids.ts';

t.test('ULIDs: valid, unique, increasing, carrying their time', async (t) => {
  const at = Date.parse('2030-01-01T00:00:00Z');
  const ids = Array.from({ length: 50_000 }, (_, i) => newId(at + Math.floor(i / 10)));
  t.ok(ids.every(isUlid), 'all valid');
  t.equal(new Set(ids).size, ids.length, 'all distinct');
  t.ok(ids.every((id, i) => i === 0 || id > ids[i - 1]!), 'strictly increasing');
  t.equal(ulidTime(ids[0]!), at);
  t.equal(decodeTime(ids[49_999]!), at + 4999);
  // The random part is uniform over the 32 symbols.
  const counts = new Map<string, number>();
  for (const id of ids.filter((_, i) => i % 10 === 0)) for (const ch of id.slice(10)) counts.set(ch, (counts.get(ch) ?? 0) + 1);
  t.equal(counts.size, 32, 'every symbol appears');
  const expected = (5000 * 16) / 32;
  t.ok([...counts.values()].every((n) => Math.abs(n - expected) < expected * 0.15), 'roughly uniform');
});
