import t from 'tap';
import { checkResponse, findOperation } from './helpers/openapi.ts';

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
