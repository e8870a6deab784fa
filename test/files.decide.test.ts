// Decider tests of files: given a file's events → when attach/reference → then events or NotFound; and the
// file fields of server, role and member edits. No Redis.
import t from 'tap';
import type { DomainEvent } from '../src/domain/events.ts';
import { decideAttach, decideReference } from '../src/domain/file/commands.ts';
import { evolveFile, isServable, type FileRecord } from '../src/domain/file/state.ts';
import type { FileObject } from '../src/domain/shared.ts';
import { decideCreateServer } from '../src/domain/server/createServer.ts';
import { decideEditMember } from '../src/domain/server/editMember.ts';
import { decideEditServer } from '../src/domain/server/editServer.ts';
import { Permission as P } from '../src/permissions/bits.ts';
import { NOW, expectError, given } from './helpers/decider.ts';

const UPLOADER = 'uploader';
const OTHER = 'other';
const file = (tag: string): FileObject => ({ _id: 'F1', tag, filename: 'a.png', metadata: { type: 'Image', width: 1, height: 1, animated: false }, content_type: 'image/png', size: 10 });
const uploaded = (tag = 'avatars'): DomainEvent => ({ type: 'FileUploaded', data: { file: file(tag), uploaderId: UPLOADER } });

function stateOf(events: DomainEvent[]): FileRecord | null {
  let s: FileRecord | null = null;
  events.forEach((e, i) => (s = evolveFile(s, e, i)));
  return s;
}

const usedFor = { type: 'UserAvatar' as const, id: UPLOADER };
const by = { type: 'Message' as const, id: 'M1' };

t.test('attach: its uploader, its own tag, once', async (t) => {
  const s = stateOf([uploaded()]);
  t.same(decideAttach(s, { tag: 'avatars', userId: UPLOADER, usedFor }), [{ type: 'FileAttached', data: { usedFor } }]);
  expectError(t, () => decideAttach(s, { tag: 'icons', userId: UPLOADER, usedFor }), { type: 'NotFound' }, 'wrong tag');
  expectError(t, () => decideAttach(s, { tag: 'avatars', userId: OTHER, usedFor }), { type: 'NotFound' }, 'another user');
  expectError(t, () => decideAttach(null, { tag: 'avatars', userId: UPLOADER, usedFor }), { type: 'NotFound' }, 'unknown');
  const used = stateOf([uploaded(), { type: 'FileAttached', data: { usedFor } }]);
  expectError(t, () => decideAttach(used, { tag: 'avatars', userId: UPLOADER, usedFor }), { type: 'NotFound' }, 'used');
  const abandoned = stateOf([{ type: 'FileUploadAbandoned', data: { fileId: 'F1', uploaderId: UPLOADER, tag: 'avatars' } }]);
  t.equal(abandoned, null, 'an abandoned upload has no state');
  expectError(t, () => decideAttach(abandoned, { tag: 'avatars', userId: UPLOADER, usedFor }), { type: 'NotFound' }, 'abandoned');
  const referenced = stateOf([uploaded(), { type: 'FileReferenced', data: { by } }]);
  t.same(decideAttach(referenced, { tag: 'avatars', userId: UPLOADER, usedFor }).length, 1, 'a reference does not consume');
});

t.test('reference: first by its uploader makes it servable; later references write nothing', async (t) => {
  const s = stateOf([uploaded()]);
  t.notOk(isServable(s));
  t.same(decideReference(s, { tag: 'avatars', userId: UPLOADER, by }), [{ type: 'FileReferenced', data: { by } }]);
  expectError(t, () => decideReference(s, { tag: 'avatars', userId: OTHER, by }), { type: 'NotFound' }, "another user's unused file");
  expectError(t, () => decideReference(stateOf([uploaded('icons')]), { tag: 'avatars', userId: UPLOADER, by }), { type: 'NotFound' }, 'not an avatar');
  const referenced = stateOf([uploaded(), { type: 'FileReferenced', data: { by } }]);
  t.ok(isServable(referenced));
  t.same(decideReference(referenced, { tag: 'avatars', userId: OTHER, by }), []);
  const attached = stateOf([uploaded(), { type: 'FileAttached', data: { usedFor } }]);
  t.ok(isServable(attached));
  t.same(decideReference(attached, { tag: 'avatars', userId: OTHER, by }), []);
  t.equal(attached?.revision, 1, 'the state carries the stream revision');
});

t.test('file fields of server and member edits', async (t) => {
  const S = 'S';
  const created = decideCreateServer({ serverId: S, channelId: 'general', ownerId: 'owner', name: 'x' }, null, { now: new Date(NOW) });
  const joined: DomainEvent = { type: 'MemberJoined', data: { member: { _id: { server: S, user: 'alice' }, joined_at: new Date(NOW).toISOString() } } };
  const g = given([...created, joined]);
  const icon = file('icons');
  g.as('owner')
    .when((v, c) => decideEditServer({ icon, remove: [] }, v, { caller: c }))
    .then(t, [{ type: 'ServerEdited', data: { data: { icon }, remove: [] } }]);
  g.as('alice').when((v, c) => decideEditServer({ icon, remove: [] }, v, { caller: c })).thenThrows(t, { type: 'MissingPermission', permission: 'ManageServer' });

  const avatar = file('avatars');
  const ctx = (c: ReturnType<typeof g.as>['caller']) => ({ caller: c, now: new Date(NOW) });
  g.as('alice')
    .when((v, c) => decideEditMember({ userId: 'alice', avatar, remove: [] }, v, ctx(c)))
    .then(t, [{ type: 'MemberEdited', data: { userId: 'alice', data: { avatar }, remove: [] } }]);
  g.as('owner').when((v, c) => decideEditMember({ userId: 'alice', avatar, remove: [] }, v, ctx(c))).thenThrows(t, { type: 'InvalidOperation' }, "another member's avatar");
  // Without ChangeAvatar (the server default grants it) a member cannot set their own.
  const noAvatars = given([...created, joined, { type: 'ServerDefaultPermissionsSet', data: { permissions: Number(P.ViewChannel) } }]);
  noAvatars.as('alice').when((v, c) => decideEditMember({ userId: 'alice', avatar, remove: [] }, v, ctx(c))).thenThrows(t, { type: 'MissingPermission', permission: 'ChangeAvatar' });
  const withAvatar = given([...created, joined, { type: 'MemberEdited', data: { userId: 'alice', data: { avatar }, remove: [] } }]);
  t.same(withAvatar.view.members.alice?.avatar, avatar);
  const cleared = given([...created, joined, { type: 'MemberEdited', data: { userId: 'alice', data: { avatar }, remove: [] } }, { type: 'MemberEdited', data: { userId: 'alice', data: {}, remove: ['Avatar'] } }]);
  t.notOk(cleared.view.members.alice?.avatar, 'remove Avatar clears it');
});
