/** Two-factor login routes (Stoat's authifier `/auth/mfa/*`). */
import methods from './methods.ts';
import recoveryFetch from './recoveryFetch.ts';
import recoveryGenerate from './recoveryGenerate.ts';
import status from './status.ts';
import ticketCreate from './ticketCreate.ts';
import totpDisable from './totpDisable.ts';
import totpEnable from './totpEnable.ts';
import totpGenerate from './totpGenerate.ts';

export default [ticketCreate, status, methods, recoveryFetch, recoveryGenerate, totpGenerate, totpEnable, totpDisable];
