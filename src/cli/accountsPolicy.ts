/**
 * `npm run accounts -- policy add|list`: the operator's policy changes, kept in the POLICY_CHANGES file (a JSON
 * array of Stoat's PolicyChange). `add` appends one (created now unless `--created`; effective now unless
 * `--effective`), checked like the file itself, and writes the file atomically (a temporary file renamed over
 * it), so a running service never reads half of it.
 */
import fs from 'node:fs';
import path from 'node:path';
import { parsePolicyChanges, PolicyChange, PolicyChangeList, readPolicyFile } from '../users/policy.ts';

/** Usage of the policy commands. */
export const POLICY_USAGE =
  'npm run accounts -- policy add --description <text> --url <url> [--effective <ISO time>] [--created <ISO time>] | policy list';

/** Where the commands print. */
export interface PolicyIo {
  print?: (line: string) => void;
  error?: (line: string) => void;
}

function option(args: string[], name: string): string | undefined {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : undefined;
}

/** Appends one change to the file; returns it (throws a line saying what is wrong). */
export function addPolicyChange(file: string, change: { description: string; url: string; effective?: string; created?: string }, now = new Date()): PolicyChange {
  const created = change.created ?? now.toISOString();
  const entry = PolicyChange.parse({ created_time: created, effective_time: change.effective ?? created, description: change.description, url: change.url });
  const list = [...readPolicyFile(file), entry];
  PolicyChangeList.parse(list);
  const tmp = path.join(path.dirname(file), `.${path.basename(file)}.${process.pid}.tmp`);
  fs.writeFileSync(tmp, `${JSON.stringify(list, null, 2)}\n`);
  // The result must read back as it will be served.
  parsePolicyChanges(fs.readFileSync(tmp, 'utf8'));
  fs.renameSync(tmp, file);
  return entry;
}

/** Runs `policy <command>`; returns the exit code. */
export function runPolicy(args: string[], file: string | undefined, io: PolicyIo = {}): number {
  const print = io.print ?? ((l: string) => console.log(l));
  const error = io.error ?? ((l: string) => console.error(l));
  const [command, ...rest] = args;
  if (!file) {
    error('POLICY_CHANGES is not set: it names the JSON file of policy changes');
    return 2;
  }
  try {
    if (command === 'list') {
      for (const p of readPolicyFile(file)) print(`${p.created_time}\t${p.effective_time}\t${p.url}\t${p.description}`);
      return 0;
    }
    if (command === 'add') {
      const description = option(rest, 'description');
      const url = option(rest, 'url');
      if (!description || !url) {
        error(`usage: ${POLICY_USAGE}`);
        return 2;
      }
      const effective = option(rest, 'effective');
      const created = option(rest, 'created');
      const entry = addPolicyChange(file, { description, url, ...(effective ? { effective } : {}), ...(created ? { created } : {}) });
      print(`added: ${entry.created_time} ${entry.url}`);
      return 0;
    }
  } catch (err) {
    const issues = (err as { issues?: Array<{ path: unknown[]; message: string }> }).issues;
    error(issues ? `invalid policy change: ${issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}` : `POLICY_CHANGES ${(err as Error).message}`);
    return 1;
  }
  error(`usage: ${POLICY_USAGE}`);
  return 2;
}
