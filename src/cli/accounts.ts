/**
 * `npm run accounts -- <command> …`: operator commands on accounts.
 *
 *   admin grant|revoke|list …   instance moderators and admins (src/cli/accountsAdmin.ts)
 */
import { ConfigError } from '../config.ts';
import { ADMIN_USAGE, runAdmin } from './accountsAdmin.ts';

const USAGE = `usage: npm run accounts -- <command> …\n${ADMIN_USAGE}`;

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case 'admin':
      return runAdmin(rest);
    default:
      process.stderr.write(USAGE + '\n');
      return 2;
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`${err instanceof ConfigError ? err.message : String((err as Error)?.stack ?? err)}\n`);
    process.exit(1);
  },
);
