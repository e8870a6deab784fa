// GET /auth/account/export — the caller's own data (GDPR art. 15/20) as a streamed ZIP of JSON files; with MFA on, a validated MFA ticket (X-MFA-Ticket).
import fs from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import yazl from 'yazl';
import { complianceRows } from '../../../compliance/export.ts';
import { presentPrivateChannel } from '../../../domain/private/state.ts';
import type { EventStore } from '../../../eventstore/port.ts';
import { privateChannelsOf } from '../../../gateway/ready.ts';
import { BlobStore } from '../../../media/blobs.ts';
import { rm } from '../../../readmodel/keys.ts';
import { spendBudget } from '../../../ratelimit/budget.ts';
import { RateLimited } from '../../middleware/errors.ts';
import { defineRoute } from '../../route.ts';
import { presentSelf, viewerRelations } from '../users/present.ts';
import { loadAccount } from './accountLoad.ts';
import { requireValidatedTicket } from './accountTools.ts';

/** A JSON file's bytes. */
const json = (v: unknown) => Buffer.from(JSON.stringify(v, null, 2) + '\n', 'utf8');

/** The caller's messages (sends, edits, deletions of their own messages) as JSON lines, read from the log as the ZIP takes them. */
async function* ownMessages(store: EventStore, userId: string): AsyncGenerator<string> {
  for await (const row of complianceRows(store, { userId })) {
    if (row.author !== userId || !['message_sent', 'message_edited', 'message_deleted'].includes(row.kind)) continue;
    yield JSON.stringify({
      kind: row.kind,
      message: row.message,
      channel: row.channel,
      server: row.server,
      at: row.at,
      content: row.content,
      ...(row.kind === 'message_edited' ? { previous_content: row.previous_content } : {}),
      erased: row.erased,
      ...(row.attachments ? { attachments: row.attachments } : {}),
    }) + '\n';
  }
}

/** The File objects the caller uploaded (processed uploads), in log order. */
async function ownUploads(store: EventStore, userId: string): Promise<Array<{ _id: string; tag: string; filename: string; [k: string]: unknown }>> {
  const files = [];
  for await (const e of store.readAll()) {
    if (e.type !== 'FileUploaded' || e.metadata.scope !== userId) continue;
    const d = e.data as { file: { _id: string; tag: string; filename: string }; uploaderId: string };
    if (d.uploaderId === userId) files.push({ ...d.file, uploaded_at: e.metadata.at });
  }
  return files;
}

export default defineRoute({
  method: 'GET',
  path: '/auth/account/export',
  auth: 'session',
  async handler({ deps, caller, ctx, meta }) {
    const stream = `account-${caller.userId}`;
    let state = await loadAccount(deps, caller.userId);
    if (state.totp?.status === 'Enabled') {
      // Stoat's ValidatedTicket guard: the ticket is checked and used up before a byte is sent.
      await deps.executor.execute(meta, [stream], async () => {
        state = await loadAccount(deps, caller.userId);
        const consumed = requireValidatedTicket(deps, ctx, state);
        return { writes: [{ stream, scope: caller.userId, expected: state.revision, events: [consumed] }], result: undefined };
      });
    }
    // Each export reads the whole log: an account takes a few a day (shared by every process), after its ticket.
    const budget = await spendBudget(deps.readModels.redis, `${deps.config.redisPrefix}export:account:${caller.userId}`, 1, deps.config.accountExportsPerDay, 86_400_000);
    if (!budget.allowed) throw new RateLimited(budget.retryAfterMs);
    const userId = caller.userId;
    const user = state.user ? presentSelf(state) : null;
    const account = {
      _id: state.userId,
      email: state.email,
      verified: !state.verification,
      disabled: state.disabled ?? false,
      mfa: { totp: state.totp?.status === 'Enabled', recovery_codes: !!state.recovery },
      sessions: Object.entries(state.sessions).map(([id, s]) => ({ _id: id, name: s.name, push: !!s.subscription })),
    };
    const settings = Object.fromEntries(await deps.readModels.hgetallJson<[number, string]>(rm.userSettings(userId)));
    const channels = (await privateChannelsOf(deps, userId)).map(presentPrivateChannel);
    const relationships = [...(await viewerRelations(deps.readModels, userId))].map(([id, status]) => ({ _id: id, status }));

    const zip = new yazl.ZipFile();
    // A failed read (the log, a blob) ends the response mid-ZIP, never the process: yazl reports it on the ZipFile.
    zip.on('error', (err: Error) => {
      deps.log.error({ err: err.message, userId }, 'account export failed mid-stream');
      (zip.outputStream as Readable).destroy(err);
    });
    zip.addBuffer(json(account), 'account.json');
    zip.addBuffer(json(user), 'profile.json');
    zip.addBuffer(json(settings), 'settings.json');
    zip.addBuffer(json(relationships), 'relationships.json');
    zip.addBuffer(json(channels), 'channels.json');
    zip.addReadStream(Readable.from(ownMessages(deps.store, userId)), 'messages.jsonl');
    const blobs = new BlobStore(path.join(deps.config.dataDir, 'files'));
    // The uploads are listed by a second read of the log while the ZIP already streams; their bytes follow,
    // each file opened only when its turn comes.
    void ownUploads(deps.store, userId).then(
      (files) => {
        zip.addBuffer(json(files), 'uploads.json');
        for (const f of files) {
          const file = blobs.originalPath(f._id);
          if (!fs.existsSync(file)) continue;
          const name = `uploads/${f._id}-${f.filename.replace(/[^\w.-]/g, '_').slice(0, 100)}`;
          zip.addReadStreamLazy(name, (cb) => cb(null, fs.createReadStream(file)));
        }
        zip.end();
      },
      (err: unknown) => zip.emit('error', err instanceof Error ? err : new Error(String(err))),
    );
    ctx.status = 200;
    ctx.type = 'application/zip';
    ctx.set('Content-Disposition', `attachment; filename="stoat-export-${userId}.zip"`);
    return zip.outputStream;
  },
});
