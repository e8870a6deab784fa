/**
 * The SQLite store's writer thread (see sqlite.ts): owns the one connection that writes, and commits each
 * group the main thread sends (sqliteCommit.ts). Messages in: `{ seq, group }` (answered `{ seq, result }` or
 * `{ seq, error }`), `{ fault }` (test fault injection: the next commits fail with that message before COMMIT,
 * `exit` ends the thread inside the transaction as a crash would, null clears it), `close`.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { openGroupWriter, type EncodedWrite } from './sqliteCommit.ts';

export type WriterRequest = { seq: number; group: EncodedWrite[][] } | { fault: string | null } | 'close';

const port = parentPort!;
const writer = openGroupWriter((workerData as { file: string }).file);
let fault: string | null = null;
const beforeCommit = () => {
  if (fault === 'exit') process.exit(1);
  if (fault !== null) throw new Error(fault);
};
port.on('message', (m: WriterRequest) => {
  if (m === 'close') {
    writer.close();
    port.close();
  } else if ('fault' in m) {
    fault = m.fault;
  } else {
    try {
      port.postMessage({ seq: m.seq, result: writer.commit(m.group, beforeCommit) });
    } catch (err) {
      port.postMessage({ seq: m.seq, error: err instanceof Error ? err.message : String(err) });
    }
  }
});
