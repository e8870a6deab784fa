import t from 'tap';
import { checkResponse, checkSchema, findOperation } from './helpers/openapi.ts';

// The response checker that every HTTP test runs through must itself be able to fail.
t.test('the OpenAPI checker rejects what the document does not allow', async (t) => {
  t.ok(findOperation('GET', '/users/@me'));
  t.equal(findOperation('GET', '/users/@me')!.template, '/users/@me', 'literal path preferred');
  t.throws(() => checkResponse('GET', '/', 200, {}, '{}'), /does not match/);
  t.throws(() => checkResponse('GET', '/users/@me', 200, { _id: 1 }, '{}'), /does not match/);
  t.throws(() => checkResponse('POST', '/servers/create', 404, { type: 'NoSuchErrorType' }, '{}'), /does not match/);
  t.doesNotThrow(() => checkResponse('POST', '/servers/create', 404, { type: 'NotFound', location: 'x' }, '{}'));
  t.doesNotThrow(() => checkResponse('POST', '/auth/account/create', 400, { type: 'ShortPassword' }, '{}'), 'auth errors allowed on auth routes');
  t.doesNotThrow(() => checkResponse('GET', '/no/such/route', 200, 'anything', ''), 'routes outside the document are not checked');
  t.doesNotThrow(() => checkResponse('GET', '/', 429, { retry_after: 5 }, ''), '429 is the spec body');
});

t.test('the component checker rejects what the schema does not allow', async (t) => {
  t.doesNotThrow(() => checkSchema('Member', { _id: { server: 's', user: 'u' }, joined_at: '2030-01-01T00:00:00.000Z' }));
  t.throws(() => checkSchema('Member', { _id: { server: 's' }, joined_at: '2030-01-01T00:00:00.000Z' }), /not a Member/);
  t.throws(() => checkSchema('User', { _id: 'u' }), /not a User/);
});
