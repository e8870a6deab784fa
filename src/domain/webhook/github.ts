/**
 * Stoat's GitHub adaptor (`POST /webhooks/:id/:token/github`): one GitHub webhook delivery (the event name from
 * `X-GitHub-Event`, the JSON payload) → the one Text embed the webhook posts, or null for deliveries Stoat
 * posts nothing for (`ping`, an unstarring, issue or pull request actions other than opened / closed /
 * reopened …). Pure; a payload without the fields its event needs, or an event Stoat does not know, is 400
 * `InvalidOperation` (Stoat's answer when its payload types do not parse).
 */
import { z } from 'zod';
import { AppError } from '../../errors.ts';
import type { SendableEmbed } from '../message/sendMessage.ts';

const GREY = '#c3e1c3';
const RED = '#e74c3c';
const GREEN = '#2ecc71';
const BLUE = '#279adc';
const ORANGE = '#d76a34';
const LIGHT_ORANGE = '#d9916d';

const User = z.object({ login: z.string(), avatar_url: z.string(), html_url: z.string() });
const Repository = z.object({ full_name: z.string(), html_url: z.string() });
const Base = z.object({ action: z.string().nullish(), sender: User, repository: Repository });
const Comment = z.object({ html_url: z.string(), body: z.string(), user: User, commit_id: z.string().nullish() });
const Issue = z.object({ number: z.number(), title: z.string(), html_url: z.string(), body: z.string().nullish() });
const Discussion = z.object({ number: z.number(), title: z.string(), html_url: z.string(), body: z.string().nullish() });
const Pull = z.object({ title: z.string(), html_url: z.string(), body: z.string().nullish() });
const Commit = z.object({ id: z.string(), url: z.string(), message: z.string(), author: z.object({ name: z.string() }) });

/** The payload's fields an event needs, or 400 InvalidOperation. */
function parse<T>(schema: z.ZodType<T>, payload: unknown): T {
  const r = schema.safeParse(payload);
  if (!r.success) throw new AppError({ type: 'InvalidOperation' });
  return r.data;
}

/** At most `length` code points: longer text is cut and ends with "...". */
export function shortenText(text: string, length: number): string {
  const cps = [...text];
  return cps.length >= length ? `${cps.slice(0, length - 3).join('')}...` : text;
}

/** The first line, at most `length` code points ("..." when cut or when there were more lines). */
export function shortenLine(text: string, length: number): string {
  if (text.includes('\n')) {
    const first = [...text.split('\n')[0]!];
    return `${first.slice(0, Math.min(first.length, length) - 3).join('')}...`;
  }
  return shortenText(text, length + 1);
}

/** The embed for one delivery, or null when Stoat posts nothing for it. */
export function githubEmbed(event: string, payload: unknown): SendableEmbed | null {
  const known = ['star', 'ping', 'push', 'commit_comment', 'create', 'delete', 'discussion', 'discussion_comment', 'fork', 'issue_comment', 'issues', 'pull_request'];
  if (!known.includes(event)) throw new AppError({ type: 'InvalidOperation' });
  if (event === 'ping') return null;
  const base = parse(Base, payload);
  const { sender, repository: repo } = base;
  const bySender = (description: string, colour: string): SendableEmbed => ({ icon_url: sender.avatar_url, url: sender.html_url, title: sender.login, description, colour });
  switch (event) {
    case 'star':
      return base.action === 'created' ? bySender(`#### [[${repo.full_name}] New star added](${repo.html_url})`, GREY) : null;
    case 'push': {
      const p = parse(z.object({ after: z.string(), commits: z.array(Commit), compare: z.string(), forced: z.boolean(), ref: z.string() }), payload);
      const branch = p.ref.split('/').slice(2).join('/');
      if (p.forced) {
        return bySender(`#### [${repo.full_name}] Branch ${branch} was force-pushed to ${p.after.slice(0, 8)}\n[compare changes](${p.compare})`, RED);
      }
      const title = `[[${repo.full_name}:${branch}] ${p.commits.length} new commit](${p.compare})`;
      const lines = shortenText(p.commits.map((c) => `[\`${c.id.slice(0, 8)}\`](${c.url}) ${shortenLine(c.message, 50)} - ${c.author.name}`).join('\n'), 1000);
      return bySender(`#### ${title}\n${lines}`, BLUE);
    }
    case 'commit_comment': {
      const { comment } = parse(z.object({ comment: Comment }), payload);
      return bySender(`#### [[${repo.full_name}] New comment on commit \`${(comment.commit_id ?? '').slice(0, 8)}\`](${comment.html_url})\n${shortenText(comment.body, 450)}`, GREY);
    }
    case 'create':
    case 'delete': {
      const p = parse(z.object({ ref: z.string(), ref_type: z.string() }), payload);
      return bySender(event === 'create' ? `#### [${repo.full_name}] New ${p.ref_type} created: ${p.ref}` : `#### [${repo.full_name}] ${p.ref_type} deleted: ${p.ref}`, GREY);
    }
    case 'discussion': {
      if (base.action === 'created') {
        const { discussion: d } = parse(z.object({ discussion: Discussion }), payload);
        return bySender(`#### [[${repo.full_name}] New discussion #${d.number}: ${d.title}](${d.html_url})\n${shortenText(d.body ?? '', 450)}`, LIGHT_ORANGE);
      }
      if (base.action === 'answered') {
        const { discussion: d, answer } = parse(z.object({ discussion: Discussion, answer: Comment }), payload);
        return { icon_url: answer.user.avatar_url, url: answer.user.html_url, title: answer.user.login, description: `#### [[${repo.full_name}] Discussion #${d.number} marked answered: ${d.title}](${answer.html_url})\n${shortenText(answer.body, 450)}`, colour: LIGHT_ORANGE };
      }
      return null;
    }
    case 'discussion_comment': {
      if (base.action !== 'created') return null;
      const { discussion: d, comment } = parse(z.object({ discussion: Discussion, comment: Comment }), payload);
      return { icon_url: comment.user.avatar_url, url: comment.user.html_url, title: comment.user.login, description: `#### [[${repo.full_name}] New comment on discussion #${d.number}: ${d.title}](${comment.html_url})\n${shortenText(comment.body, 450)}`, colour: LIGHT_ORANGE };
    }
    case 'fork': {
      const { forkee } = parse(z.object({ forkee: Repository }), payload);
      return bySender(`#### [[${repo.full_name}] Fork created: ${forkee.full_name}](${forkee.html_url})`, GREY);
    }
    case 'issues': {
      const { issue } = parse(z.object({ issue: Issue }), payload);
      if (base.action === 'opened') return bySender(`#### [[${repo.full_name}] Issue Opened #${issue.number}: ${issue.title}](${issue.html_url})\n${shortenText(issue.body ?? '', 450)}`, ORANGE);
      if (base.action === 'closed') return bySender(`#### [[${repo.full_name}] Issue Closed #${issue.number}: ${issue.title}](${issue.html_url})`, GREY);
      if (base.action === 'reopened') return bySender(`#### [[${repo.full_name}] Issue Reopened #${issue.number}: ${issue.title}](${issue.html_url})`, GREEN);
      return null;
    }
    case 'issue_comment': {
      if (base.action !== 'created') return null;
      const { issue, comment } = parse(z.object({ issue: Issue, comment: Comment }), payload);
      return bySender(`#### [[${repo.full_name}] New comment on issue #${issue.number}: ${issue.title}](${comment.html_url})\n${shortenText(comment.body, 450)}`, LIGHT_ORANGE);
    }
    case 'pull_request': {
      const { number, pull_request: pr } = parse(z.object({ number: z.number(), pull_request: Pull }), payload);
      if (base.action === 'opened') return bySender(`#### [[${repo.full_name}] Pull Request Opened #${number}: ${pr.title}](${pr.html_url})\n${shortenText(pr.body ?? '', 450)}`, ORANGE);
      if (base.action === 'closed') return bySender(`#### [[${repo.full_name}] Pull Request Closed #${number}: ${pr.title}](${pr.html_url})`, GREY);
      if (base.action === 'reopened') return bySender(`#### [[${repo.full_name}] Pull Request Reopened #${number}: ${pr.title}](${pr.html_url})`, GREEN);
      return null;
    }
    default:
      throw new AppError({ type: 'InvalidOperation' });
  }
}
