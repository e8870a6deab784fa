// GET /admin/export — the compliance export (every message event and moderation action of a time range) as streamed JSONL or CSV (instance admins only).
import { Readable } from 'node:stream';
import { z } from 'zod';
import { complianceRows, csvHeader, formatRow, type ComplianceFilter } from '../../../compliance/export.ts';
import { AppError } from '../../../errors.ts';
import { describeIssues } from '../../app.ts';
import { defineRoute } from '../../route.ts';
import { callerRole, staffOnly } from './staff.ts';

const Time = z
  .string()
  .max(64)
  .refine((s) => !Number.isNaN(Date.parse(s)), 'an ISO time');
const Id = z.string().min(1).max(128);

/** The export's query, checked after authorization (a caller without the role learns nothing from a 400). */
const ExportQuery = z.object({
  from: Time,
  to: Time,
  server: Id.optional(),
  channel: Id.optional(),
  user: Id.optional(),
  format: z.enum(['jsonl', 'csv']).default('jsonl'),
});

/** What the router validates before the handler: bounded strings only. */
const Query = z.record(z.string(), z.union([z.string().max(256), z.array(z.string().max(256)).max(4)]));

export default defineRoute({
  method: 'GET',
  path: '/admin/export',
  auth: 'user',
  authorize: staffOnly('admin'),
  query: Query,
  async handler(rc) {
    await callerRole(rc, 'admin');
    const parsed = ExportQuery.safeParse(rc.query);
    if (!parsed.success) throw new AppError({ type: 'FailedValidation', error: describeIssues(parsed.error, 'query') });
    const q = parsed.data;
    const filter: ComplianceFilter = {
      from: new Date(q.from),
      to: new Date(q.to),
      ...(q.server !== undefined ? { serverId: q.server } : {}),
      ...(q.channel !== undefined ? { channelId: q.channel } : {}),
      ...(q.user !== undefined ? { userId: q.user } : {}),
    };
    const store = rc.deps.store;
    const format = q.format;
    // A generator read by the response as the client takes it: backpressure pauses the log read, and a client
    // that goes away ends it (the stream is destroyed, the generator returns).
    async function* lines() {
      if (format === 'csv') yield csvHeader();
      for await (const row of complianceRows(store, filter)) yield formatRow(row, format);
    }
    rc.ctx.status = 200;
    rc.ctx.type = format === 'csv' ? 'text/csv; charset=utf-8' : 'application/x-ndjson';
    rc.ctx.set('Content-Disposition', `attachment; filename="compliance-export.${format}"`);
    return Readable.from(lines());
  },
});
