// The page and the inspector take ?token= and ?key= out of their URL once read (docs/security.md
// §9): the history entry is replaced by the same URL without them.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { takeCredentials } from '../static/js/urlcred.js';

/** A history that records replaceState calls. */
function fakeHistory() {
  return { state: { s: 1 }, calls: /** @type {any[]} */ ([]), replaceState(data, unused, url) { this.calls.push({ data, unused, url }); } };
}

test('token and key are read and taken out of the URL', () => {
  const h = fakeHistory();
  const got = takeCredentials({ href: 'https://game.example/?room=arena&token=jwt.abc&user=al&key=adm#frag' }, h);
  assert.equal(got.token, 'jwt.abc');
  assert.equal(got.key, 'adm');
  assert.equal(got.params.get('room'), 'arena');
  assert.equal(got.params.get('user'), 'al');
  assert.equal(got.params.has('token'), false);
  assert.equal(h.calls.length, 1);
  assert.equal(h.calls[0].url, '/?room=arena&user=al#frag');
  assert.deepEqual(h.calls[0].data, { s: 1 });
});

test('the inspector URL keeps its path', () => {
  const h = fakeHistory();
  const got = takeCredentials({ href: 'http://127.0.0.1:7880/inspect?key=k' }, h);
  assert.equal(got.key, 'k');
  assert.equal(got.token, '');
  assert.equal(h.calls[0].url, '/inspect');
});

test('a URL without credentials is left alone', () => {
  const h = fakeHistory();
  const got = takeCredentials({ href: 'http://127.0.0.1:7880/?room=arena' }, h);
  assert.equal(got.token, '');
  assert.equal(got.params.get('room'), 'arena');
  assert.equal(h.calls.length, 0);
});
