/**
 * Shared by the account routes: finding an account by email (keyed digest, then the pre-keyed SHA-256 of
 * older accounts), mailed tokens (single-use, expiring, stored as SHA-256, compared in constant time),
 * MFA tickets from the `X-MFA-Ticket` header, the mail queue with its per-address budget, and the work the
 * anonymous mail routes do after answering.
 */
import type Koa from 'koa';
import { AppError } from '../../../errors.ts';
import { newId } from '../../../ids.ts';
import { emailDigest, emailKeyOf, hashToken, newAccountToken, sameDigest, tokenUserId } from '../../../domain/account/secrets.ts';
import type { AccountState, MfaTicketState, PendingToken } from '../../../domain/account/state.ts';
import type { DomainEvent } from '../../../domain/events.ts';
import { TICKET_TTL_MS } from '../../../domain/account/mfa.ts';
import { buildMail, linkFor, type MailKind } from '../../../mail/templates.ts';
import { rm } from '../../../readmodel/keys.ts';
import type { AppDeps } from '../../deps.ts';
import { spendBudget } from '../../../ratelimit/budget.ts';

/** The keyed digest of a normalised email (the name of its `email-…` stream). */
export function emailKey(deps: AppDeps, email: string): string {
  return emailKeyOf(deps.secrets.emailLookupKey, email);
}

/** The account of an email (not deleted), or null. */
export async function findAccountByEmail(deps: AppDeps, email: string): Promise<AccountState | null> {
  const userId =
    (await deps.readModels.getJson<string>(rm.accountByEmail(emailKey(deps, email)))) ??
    // Accounts registered before digests were keyed are indexed by the plain SHA-256.
    (await deps.readModels.getJson<string>(rm.accountByEmail(emailDigest(email))));
  if (!userId) return null;
  const state = await deps.readModels.getJson<AccountState>(rm.account(userId));
  return state && !state.deleted ? state : null;
}

/** The account state of a user id, or null (also for a deleted account). */
export async function accountOf(deps: AppDeps, userId: string): Promise<AccountState | null> {
  const state = await deps.readModels.getJson<AccountState>(rm.account(userId));
  return state && !state.deleted ? state : null;
}

/** A fresh mailed token for an account: the token (for the link) and what is stored of it. */
export function newMailToken(deps: AppDeps, userId: string): { token: string; pending: PendingToken } {
  const token = newAccountToken(userId);
  return { token, pending: { tokenHash: hashToken(token), expiresAt: new Date(deps.now() + deps.config.emailTokenTtlMs).toISOString() } };
}

/** True when `token` matches the pending token and it has not expired. */
export function tokenMatches(deps: AppDeps, pending: PendingToken | null | undefined, token: string): boolean {
  if (!pending) return false;
  return sameDigest(pending.tokenHash, hashToken(token)) && Date.parse(pending.expiresAt) > deps.now();
}

/**
 * Takes one mail from the address's budget (MAIL_PER_ADDRESS_PER_HOUR, shared by every kind of mail and
 * every process; keyed by the keyed digest, never the address). False when the hour's budget is spent.
 */
export async function takeMailBudget(deps: AppDeps, to: string): Promise<boolean> {
  const key = `${deps.config.redisPrefix}mail:budget:${emailKey(deps, to)}`;
  const r = await spendBudget(deps.readModels.redis, key, 1, deps.config.mailPerAddressPerHour, HOUR_MS);
  if (!r.allowed) deps.log.info({ retryAfterMs: r.retryAfterMs }, 'mail not sent: the address has had its mails for this hour');
  return r.allowed;
}

/** Queues a mail with a link whose budget was already taken (never awaited by the request beyond the enqueue). */
export async function queueLinkMail(deps: AppDeps, kind: MailKind, to: string, token: string): Promise<void> {
  if (!deps.mail) return;
  await deps.mail.send(buildMail(kind, to, linkFor(deps.config.appUrl, kind, token)));
}

/** Queues a mail with a link if the address's budget allows it. */
export async function sendLinkMail(deps: AppDeps, kind: MailKind, to: string, token: string): Promise<void> {
  if (!deps.mail) return;
  if (!(await takeMailBudget(deps, to))) return;
  await queueLinkMail(deps, kind, to, token);
}

const HOUR_MS = 60 * 60 * 1000;

/**
 * Work an anonymous route does after it has answered (the account lookup and the mail of
 * `reset_password` and `reverify`): the answer is the same, in content and in work, whether or not the
 * address has an account. One task runs at a time per process, in order; past `max` waiting tasks a new
 * one is dropped (logged), so a flood costs memory no more than that.
 */
export class AfterAnswer {
  private readonly tasks: Array<() => Promise<void>> = [];
  private running = false;
  private paused = false;
  constructor(private readonly max: number) {}

  /** Queues a task; false when the queue is full and it was dropped. */
  add(task: () => Promise<void>): boolean {
    if (this.tasks.length >= this.max) return false;
    this.tasks.push(task);
    this.drain();
    return true;
  }

  /** Tasks waiting (not the one running). */
  pending(): number {
    return this.tasks.length;
  }

  /** Holds the queue (tests: to look at what a request did before its task runs). */
  pause(): void {
    this.paused = true;
  }

  /** Lets the queue run again. */
  resume(): void {
    this.paused = false;
    this.drain();
  }

  private drain(): void {
    if (this.running || this.paused) return;
    const task = this.tasks.shift();
    if (!task) return;
    this.running = true;
    void task().finally(() => {
      this.running = false;
      this.drain();
    });
  }
}

/** This process's queue of after-answer work. */
export const afterAnswer = new AfterAnswer(1000);

/** Runs `task` after the answer; its failure is logged (the client has its answer already). */
export function runAfterAnswer(deps: AppDeps, what: string, task: () => Promise<void>): void {
  const queued = afterAnswer.add(async () => {
    try {
      await task();
    } catch (err) {
      deps.log.warn({ err: (err as Error).message, what }, 'work after the answer failed');
    }
  });
  if (!queued) deps.log.warn({ what }, 'work after the answer dropped: too many waiting');
}

/** A new MFA ticket: its token (handed out once) and its event. */
export function newTicket(deps: AppDeps, userId: string, flags: { validated: boolean; authorised: boolean }): { id: string; token: string; event: DomainEvent } {
  const id = newId();
  const token = newAccountToken(userId);
  const expiresAt = new Date(deps.now() + TICKET_TTL_MS).toISOString();
  return { id, token, event: { type: 'MfaTicketCreated', data: { ticketId: id, tokenHash: hashToken(token), expiresAt, ...flags } } };
}

/** The open, unexpired ticket of the account matching `token`, or null. Every ticket is compared. */
export function findTicket(deps: AppDeps, state: AccountState, token: string): { id: string; ticket: MfaTicketState } | null {
  const hash = hashToken(token);
  let found: { id: string; ticket: MfaTicketState } | null = null;
  for (const [id, ticket] of Object.entries(state.tickets ?? {})) {
    if (sameDigest(ticket.tokenHash, hash) && Date.parse(ticket.expiresAt) > deps.now() && !found) found = { id, ticket };
  }
  return found;
}

/**
 * The validated MFA ticket of the `X-MFA-Ticket` header for the caller's account (Stoat's `ValidatedTicket`
 * guard): missing, unknown, expired, someone else's or unvalidated → 401 InvalidToken. The caller appends
 * `MfaTicketConsumed` with its operation, so a ticket is used once.
 */
export function requireValidatedTicket(deps: AppDeps, ctx: Koa.Context, state: AccountState): DomainEvent {
  const token = ctx.get('X-MFA-Ticket');
  if (!token || token.length > 128 || tokenUserId(token) !== state.userId) throw new AppError({ type: 'InvalidToken' });
  const t = findTicket(deps, state, token);
  if (!t || !t.ticket.validated) throw new AppError({ type: 'InvalidToken' });
  return { type: 'MfaTicketConsumed', data: { ticketId: t.id } };
}

/** The MFATicket object Stoat answers with. */
export function presentTicket(id: string, userId: string, token: string, flags: { validated: boolean; authorised: boolean }) {
  return { _id: id, account_id: userId, token, validated: flags.validated, authorised: flags.authorised };
}
