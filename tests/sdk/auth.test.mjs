// API keys (--api-key, --api-key-file) as each SDK sends them: OpenAI `Authorization: Bearer`,
// Anthropic `x-api-key`, Ollama headers set by the caller. A wrong or missing key is a 401 in each
// API's error shape; the right key works.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { Ollama } from 'ollama';
import { startHerd, stopHerd, MODEL } from './herd.mjs';

const KEY = 'sk-herd-test-1';
const FILE_KEY = 'sk-herd-test-from-file';
let herd;
let dir;

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'herd-sdk-keys-'));
  const keyFile = join(dir, 'keys');
  writeFileSync(keyFile, `${FILE_KEY}\n`);
  herd = await startHerd(['--api-key', KEY, '--api-key-file', keyFile]);
});

after(async () => {
  rmSync(dir, { recursive: true, force: true });
  await stopHerd(herd);
});

const openai = (apiKey) => new OpenAI({ baseURL: `${herd.url}/v1`, apiKey, maxRetries: 0 });
const anthropic = (apiKey) => new Anthropic({ baseURL: herd.url, apiKey, maxRetries: 0 });
const messages = [{ role: 'user', content: 'Hi' }];

test('openai: wrong key is an AuthenticationError (401); right keys work', async () => {
  for (const call of [
    (c) => c.models.list(),
    (c) => c.chat.completions.create({ model: MODEL, messages, max_tokens: 1 }),
  ]) {
    await assert.rejects(call(openai('sk-wrong')), (err) => {
      assert.ok(err instanceof OpenAI.AuthenticationError, `${err?.constructor?.name}: ${err}`);
      assert.equal(err.status, 401);
      assert.equal(err.type, 'authentication_error');
      return true;
    });
  }
  const c = await openai(KEY).chat.completions.create({ model: MODEL, messages, max_tokens: 1 });
  assert.equal(c.choices.length, 1);
  const page = await openai(FILE_KEY).models.list();
  assert.deepEqual(page.data.map((m) => m.id), [MODEL]);
});

test('anthropic: wrong key is an AuthenticationError (401); right key works', async () => {
  await assert.rejects(anthropic('sk-wrong').messages.create({ model: MODEL, max_tokens: 1, messages }), (err) => {
    assert.ok(err instanceof Anthropic.AuthenticationError, `${err?.constructor?.name}: ${err}`);
    assert.equal(err.status, 401);
    assert.equal(err.error.type, 'error');
    assert.equal(err.error.error.type, 'authentication_error');
    return true;
  });
  await assert.rejects(anthropic('sk-wrong').messages.countTokens({ model: MODEL, messages }),
    Anthropic.AuthenticationError);
  const msg = await anthropic(KEY).messages.create({ model: MODEL, max_tokens: 1, messages });
  assert.equal(msg.type, 'message');
  // Bearer tokens (authToken) are accepted as well.
  const viaBearer = new Anthropic({ baseURL: herd.url, apiKey: null, authToken: FILE_KEY, maxRetries: 0 });
  assert.ok((await viaBearer.messages.countTokens({ model: MODEL, messages })).input_tokens > 0);
});

test('ollama: missing key is a ResponseError (401); the key in headers works', async () => {
  const noKey = new Ollama({ host: herd.url });
  for (const call of [() => noKey.list(), () => noKey.chat({ model: MODEL, messages, stream: false })]) {
    await assert.rejects(call(), (err) => {
      assert.equal(err.name, 'ResponseError', `${err}`);
      assert.equal(err.status_code, 401);
      return true;
    });
  }
  const withKey = new Ollama({ host: herd.url, headers: { Authorization: `Bearer ${KEY}` } });
  const { models } = await withKey.list();
  assert.deepEqual(models.map((m) => m.name), [MODEL]);
  const r = await withKey.chat({ model: MODEL, messages, stream: false, options: { num_predict: 1 } });
  assert.equal(r.done, true);
});
