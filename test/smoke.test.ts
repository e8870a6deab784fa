import t from 'tap';
import { loadConfig } from '../src/config.ts';
t.test('config defaults', async (t) => {
  const c = loadConfig({});
  t.equal(c.apiPort, 14702);
});
