/** The pure decisions of voice presence and moderation, without Redis. */
import t from 'tap';
import { AppError } from '../src/errors.ts';
import { checkSanctionTarget, decideBan, decideLift, decideSuspend, decideTriage, foldStaff } from '../src/domain/moderation/decide.ts';
import type { ReportState, SanctionState } from '../src/domain/moderation/state.ts';
import { sanctionActive } from '../src/domain/moderation/state.ts';
import { decideVoice, type ServerVoiceState } from '../src/domain/voice/state.ts';

const typeOf = (fn: () => unknown) => {
  try {
    fn();
  } catch (err) {
    return err instanceof AppError ? err.body.type : String(err);
  }
  return 'no error';
};

t.test('voice: joins, moves, late leaves, track changes', async (t) => {
  const flags = { is_receiving: true, is_publishing: false, screensharing: false, camera: false };
  const st: ServerVoiceState = { participants: { u: { channel: 'a', state: { id: 'u', joined_at: 1, ...flags } } }, revision: 3 };
  t.same(decideVoice(null, { kind: 'joined', channel: 'a', user: 'u', at: 5 }), [{ type: 'VoiceParticipantJoined', data: { channel: 'a', user: 'u', joined_at: 5 } }]);
  t.same(decideVoice(st, { kind: 'joined', channel: 'a', user: 'u', at: 5 }), [], 'already there');
  t.same(decideVoice(st, { kind: 'joined', channel: 'b', user: 'u', at: 5 }), [{ type: 'VoiceParticipantJoined', data: { channel: 'b', user: 'u', joined_at: 5, moved_from: 'a' } }]);
  t.same(decideVoice(st, { kind: 'left', channel: 'b', user: 'u' }), [], 'a leave of a channel the user is not in');
  t.same(decideVoice(st, { kind: 'left', channel: 'a', user: 'u' }), [{ type: 'VoiceParticipantLeft', data: { channel: 'a', user: 'u' } }]);
  t.same(decideVoice(st, { kind: 'track', channel: 'a', user: 'u', source: 'microphone', on: true }), [{ type: 'VoiceStateUpdated', data: { channel: 'a', user: 'u', data: { is_publishing: true } } }]);
  t.same(decideVoice(st, { kind: 'track', channel: 'a', user: 'u', source: 'camera', on: false }), [], 'no change');
  t.same(decideVoice(st, { kind: 'track', channel: 'a', user: 'u', source: 'screen', on: true }), [{ type: 'VoiceStateUpdated', data: { channel: 'a', user: 'u', data: { screensharing: true } } }]);
  t.same(decideVoice(st, { kind: 'track', channel: 'b', user: 'u', source: 'screen', on: true }), [], 'another channel');
});

t.test('moderation: who may sanction whom', async (t) => {
  t.equal(typeOf(() => checkSanctionTarget('a', 'admin', 'a', null)), 'InvalidOperation');
  t.equal(typeOf(() => checkSanctionTarget('m', 'moderator', 'x', 'moderator')), 'NotPrivileged');
  t.equal(typeOf(() => checkSanctionTarget('a', 'admin', 'x', 'admin')), 'NotPrivileged');
  t.equal(typeOf(() => checkSanctionTarget('a', 'admin', 'x', 'moderator')), 'no error');
  t.equal(typeOf(() => checkSanctionTarget('m', 'moderator', 'x', null)), 'no error');
});

t.test('moderation: sanctions and their standing', async (t) => {
  const s = (kind: SanctionState['kind'], until: string | null = null): SanctionState => ({ kind, until, reason: 'r', actor: 'a', at: 'x', revision: 0 });
  t.equal(typeOf(() => decideSuspend(s('banned'), { userId: 'u', until: null, reason: 'r' })), 'NoEffect');
  t.equal(decideSuspend(s('suspended'), { userId: 'u', until: null, reason: 'r' }).length, 1, 'a new suspension replaces the old');
  t.equal(typeOf(() => decideBan(s('banned'), { userId: 'u', reason: 'r' })), 'NoEffect');
  t.equal(typeOf(() => decideLift(null, { userId: 'u', reason: 'r' })), 'NoEffect');
  t.equal(typeOf(() => decideLift(s('none'), { userId: 'u', reason: 'r' })), 'NoEffect');
  t.equal(sanctionActive(s('suspended', '2030-01-01T00:00:00.000Z'), Date.parse('2029-12-31T23:59:59.999Z')), true);
  t.equal(sanctionActive(s('suspended', '2030-01-01T00:00:00.000Z'), Date.parse('2030-01-01T00:00:00.000Z')), false, 'ends at its time');
  t.equal(sanctionActive(s('banned'), Date.now() + 1e12), true);
  t.equal(sanctionActive(s('none'), 0), false);
  t.equal(sanctionActive(null, 0), false);
});

t.test('moderation: triage', async (t) => {
  const r = { status: 'Created', notes: '' } as ReportState;
  t.same(decideTriage(r, {}), []);
  t.same(decideTriage(r, { notes: '' }), [], 'unchanged notes');
  t.equal(typeOf(() => decideTriage(r, { status: 'Rejected' })), 'FailedValidation');
  t.equal(typeOf(() => decideTriage(r, { rejection_reason: 'x' })), 'FailedValidation');
  t.same(decideTriage(r, { status: 'Resolved', notes: 'n' }).map((e) => e.type), ['ReportNotesEdited', 'ReportResolved']);
  t.same(decideTriage({ ...r, status: 'Resolved' }, { status: 'Created' }).map((e) => e.type), ['ReportReopened']);
  t.same(decideTriage({ ...r, status: 'Resolved' }, { status: 'Resolved' }), [], 'already resolved');
});

t.test('the staff folded from its stream', async (t) => {
  const staff = foldStaff([
    { type: 'InstanceRoleGranted', data: { userId: 'a', role: 'moderator' } },
    { type: 'InstanceRoleGranted', data: { userId: 'b', role: 'admin' } },
    { type: 'InstanceRoleGranted', data: { userId: 'a', role: 'admin' } },
    { type: 'InstanceRoleRevoked', data: { userId: 'b' } },
  ]);
  t.same([...staff], [['a', 'admin']]);
});
