// SqliteKeyStore: the key store contract on DATA_DIR/keys.sqlite (the raw check reads the file and its WAL).
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { SqliteKeyStore } from '../src/personal/keyStore.ts';
import { keyStoreContract } from './keystore.contract.ts';
import { tempDir } from './helpers/service.ts';

t.test('contract', async (t) => {
  await keyStoreContract(t, 'sqlite', async () => {
    const file = path.join(tempDir(t, 'sqlite-keys'), 'keys.sqlite');
    const read = (f: string) => (fs.existsSync(f) ? fs.readFileSync(f) : Buffer.alloc(0));
    return {
      open: async () => new SqliteKeyStore(file),
      holds: async (bytes) => [file, `${file}-wal`].some((f) => read(f).includes(bytes)),
      cleanup: async () => {},
    };
  });
});
