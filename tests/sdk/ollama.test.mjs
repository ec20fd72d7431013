// herd's Ollama API through the official `ollama` npm package: list, version, chat and generate
// (NDJSON stream and whole), embed and embeddings, options, errors, show / ps / copy / delete.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Ollama } from 'ollama';
import { startHerd, stopHerd, MODEL } from './herd.mjs';

let herd;
let ollama;

before(async () => {
  herd = await startHerd();
  ollama = new Ollama({ host: herd.url });
});

after(async () => {
  await stopHerd(herd);
});

const messages = [
  { role: 'system', content: 'You are terse.' },
  { role: 'user', content: 'Say hello.' },
];

// The final object of a chat or generate: counts and durations (nanoseconds), done_reason.
function checkFinal(r, numPredict) {
  assert.equal(r.model, MODEL);
  assert.equal(r.done, true);
  assert.ok(r.done_reason === 'length' || r.done_reason === 'stop', `done_reason ${r.done_reason}`);
  if (r.done_reason === 'length') assert.equal(r.eval_count, numPredict);
  else assert.ok(r.eval_count <= numPredict);
  assert.ok(Number.isInteger(r.prompt_eval_count) && r.prompt_eval_count > 0);
  for (const k of ['total_duration', 'load_duration', 'prompt_eval_duration', 'eval_duration']) {
    assert.ok(Number.isInteger(r[k]) && r[k] >= 0, `${k} = ${r[k]}`);
  }
  assert.ok(r.total_duration >= r.prompt_eval_duration + r.eval_duration, 'total covers prompt eval and eval');
  assert.ok(!Number.isNaN(Date.parse(r.created_at)), `created_at ${r.created_at}`);
}

const EMBEDDING_DIM = 256; // the tiny shape's embedding_length

function norm(v) {
  return Math.sqrt(v.reduce((s, x) => s + x * x, 0));
}

function assertClose(a, b, tol, what) {
  assert.equal(a.length, b.length, `${what}: lengths`);
  for (let i = 0; i < a.length; i++) assert.ok(Math.abs(a[i] - b[i]) <= tol, `${what}[${i}]: ${a[i]} vs ${b[i]}`);
}

test('list', async () => {
  const { models } = await ollama.list();
  assert.equal(models.length, 1);
  const [m] = models;
  assert.equal(m.name, MODEL);
  assert.equal(m.model, MODEL);
  assert.ok(Number.isInteger(m.size) && m.size > 1_000_000, `size ${m.size} is the file size`);
  assert.ok(!Number.isNaN(Date.parse(m.modified_at)), `modified_at ${m.modified_at}`);
  assert.equal(typeof m.digest, 'string');
  assert.equal(m.details.format, 'gguf');
  assert.equal(m.details.family, 'llama');
});

test('version', async () => {
  const v = await ollama.version();
  assert.match(v.version, /^\d+\.\d+\.\d+/);
});

test('chat, whole response', async () => {
  const r = await ollama.chat({ model: MODEL, messages, stream: false, options: { num_predict: 7, temperature: 0.5, seed: 2 } });
  assert.equal(r.message.role, 'assistant');
  assert.equal(typeof r.message.content, 'string');
  checkFinal(r, 7);
});

test('chat, streamed', async () => {
  const stream = await ollama.chat({ model: MODEL, messages, stream: true, options: { num_predict: 6 } });
  const parts = [];
  for await (const part of stream) parts.push(part);
  assert.ok(parts.length >= 2);
  for (const p of parts.slice(0, -1)) {
    assert.equal(p.done, false);
    assert.equal(p.model, MODEL);
    assert.equal(p.message.role, 'assistant');
    assert.equal(typeof p.message.content, 'string');
  }
  const last = parts.at(-1);
  checkFinal(last, 6);
  assert.ok(parts.length - 1 <= last.eval_count, 'at most one content object per generated token');
});

test('chat: greedy stream and whole response agree', async () => {
  const req = { model: MODEL, messages, options: { num_predict: 8, temperature: 0 } };
  const whole = await ollama.chat({ ...req, stream: false });
  let text = '';
  for await (const part of await ollama.chat({ ...req, stream: true })) text += part.message.content;
  assert.equal(text, whole.message.content);
});

test('generate, whole response and streamed', async () => {
  const req = { model: MODEL, prompt: 'Once upon a time', options: { num_predict: 5, temperature: 0 } };
  const whole = await ollama.generate({ ...req, stream: false });
  assert.equal(typeof whole.response, 'string');
  checkFinal(whole, 5);
  const parts = [];
  for await (const part of await ollama.generate({ ...req, stream: true })) parts.push(part);
  const last = parts.at(-1);
  checkFinal(last, 5);
  for (const p of parts.slice(0, -1)) assert.equal(p.done, false);
  assert.equal(parts.map((p) => p.response).join(''), whole.response);
  // prompt_eval_count counts evaluated prompt tokens: the repeat is partly served by the prefix cache.
  assert.ok(last.prompt_eval_count <= whole.prompt_eval_count);
});

test('generate with system and raw', async () => {
  const system = 'Be brief. Answer with a single short sentence and nothing else.';
  const withSystem = await ollama.generate({ model: MODEL, prompt: 'Hi', system, stream: false,
    options: { num_predict: 2 } });
  const plain = await ollama.generate({ model: MODEL, prompt: 'Hi', stream: false, options: { num_predict: 2 } });
  assert.ok(withSystem.prompt_eval_count > plain.prompt_eval_count, 'the system prompt is part of the prompt');
  const raw = await ollama.generate({ model: MODEL, prompt: 'Hi', raw: true, stream: false, options: { num_predict: 2 } });
  assert.ok(raw.prompt_eval_count <= 3, `raw skips the template: BOS + at most 2 tokens, got ${raw.prompt_eval_count}`);
  checkFinal(raw, 2);
});

test('options.stop ends generation', async () => {
  const req = { model: MODEL, prompt: 'Once upon a time', stream: false, options: { num_predict: 12, temperature: 0 } };
  const full = (await ollama.generate(req)).response;
  const chars = [...full];
  const at = chars.findIndex((ch, i) => i >= 2 && ch.trim() !== '' && ch !== '\uFFFD');
  if (at < 0) return; // nothing printable to stop on in this output
  const r = await ollama.generate({ ...req, options: { ...req.options, stop: [chars[at]] } });
  assert.equal(r.done_reason, 'stop');
  assert.ok(!r.response.includes(chars[at]));
  assert.ok(full.startsWith(r.response));
});

test('unknown model is a ResponseError with status 404', async () => {
  for (const call of [
    () => ollama.chat({ model: 'no-such-model', messages, stream: false }),
    () => ollama.generate({ model: 'no-such-model', prompt: 'x', stream: false }),
    () => ollama.chat({ model: 'no-such-model', messages, stream: true }),
  ]) {
    await assert.rejects(call(), (err) => {
      assert.equal(err.name, 'ResponseError', `${err}`);
      assert.equal(err.status_code, 404);
      assert.match(err.error, /no-such-model/);
      return true;
    });
  }
});

// Ollama names carry a tag; "name" and "name:latest" are the same model.
test('the :latest tag names the same model', async () => {
  const r = await ollama.chat({ model: `${MODEL}:latest`, messages, stream: false, options: { num_predict: 1 } });
  assert.equal(r.done, true);
});

test('bad requests are a ResponseError with status 400', async () => {
  await assert.rejects(ollama.chat({ model: MODEL, messages: [{ role: 'user', content: 'x', images: ['aGk='] }] }),
    (err) => err.name === 'ResponseError' && err.status_code === 400);
  await assert.rejects(ollama.generate({ model: MODEL, prompt: 'x', options: { temperature: 'hot' } }),
    (err) => err.name === 'ResponseError' && err.status_code === 400);
});

// ---- Ollama embed / embeddings ----

test('ollama embed: string and array input, normalized', async () => {
  const one = await ollama.embed({ model: MODEL, input: 'The quick brown fox' });
  assert.equal(one.model, MODEL);
  assert.equal(one.embeddings.length, 1);
  assert.equal(one.embeddings[0].length, EMBEDDING_DIM);
  assert.ok(Math.abs(norm(one.embeddings[0]) - 1) < 1e-4);
  assert.ok(one.prompt_eval_count > 0);
  assert.ok(Number.isInteger(one.total_duration));
  const two = await ollama.embed({ model: MODEL, input: ['The quick brown fox', 'jumps'] });
  assert.equal(two.embeddings.length, 2);
  assertClose(two.embeddings[0], one.embeddings[0], 1e-4, 'batch[0]');
  // The same model through the OpenAI route gives the same vector.
  const res = await fetch(`${herd.url}/v1/embeddings`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: MODEL, input: 'The quick brown fox', encoding_format: 'float' }),
  });
  assert.equal(res.status, 200);
  assertClose((await res.json()).data[0].embedding, one.embeddings[0], 1e-4, 'ollama vs openai');
});

test('ollama embeddings (legacy): one prompt, one vector', async () => {
  const r = await ollama.embeddings({ model: MODEL, prompt: 'The quick brown fox' });
  assert.equal(r.embedding.length, EMBEDDING_DIM);
  assert.ok(r.embedding.every(Number.isFinite));
});

test('ollama embed errors', async () => {
  await assert.rejects(ollama.embed({ model: 'no-such-model', input: 'x' }),
    (err) => err.name === 'ResponseError' && err.status_code === 404);
});

// ---- model management: show / ps / copy / delete ----

test('ollama show', async () => {
  const s = await ollama.show({ model: MODEL });
  assert.equal(s.details.format, 'gguf');
  assert.equal(s.details.family, 'llama');
  assert.equal(typeof s.template, 'string');
  assert.equal(typeof s.modelfile, 'string');
  assert.equal(typeof s.parameters, 'string');
  assert.ok(!Number.isNaN(Date.parse(s.modified_at)));
  assert.equal(s.model_info['general.architecture'], 'llama');
  assert.equal(s.model_info['llama.embedding_length'], EMBEDDING_DIM);
  assert.equal(s.model_info['llama.block_count'], 2);
  assert.ok(Array.isArray(s.capabilities) && s.capabilities.includes('completion'));
  await assert.rejects(ollama.show({ model: 'no-such-model' }),
    (err) => err.name === 'ResponseError' && err.status_code === 404);
});

test('ollama ps lists the loaded model', async () => {
  await ollama.generate({ model: MODEL, prompt: 'x', stream: false, options: { num_predict: 1 } });
  const { models } = await ollama.ps();
  const m = models.find((x) => x.name === MODEL);
  assert.ok(m, `ps lists ${MODEL}: ${JSON.stringify(models)}`);
  assert.equal(m.model, MODEL);
  assert.ok(m.size > 0);
  assert.ok(!Number.isNaN(Date.parse(m.expires_at)));
  assert.equal(m.details.format, 'gguf');
});

test('ollama copy then delete', async () => {
  const copy = `${MODEL}-copy`;
  assert.deepEqual(await ollama.copy({ source: MODEL, destination: copy }), { status: 'success' });
  const listed = (await ollama.list()).models.map((m) => m.name);
  // Ollama names a copy with its tag: "name" becomes "name:latest".
  assert.ok(listed.includes(`${copy}:latest`) && listed.includes(MODEL), `list after copy: ${listed}`);
  const r = await ollama.chat({ model: copy, messages: [{ role: 'user', content: 'Hi' }], stream: false,
    options: { num_predict: 1 } });
  assert.equal(r.done, true);
  // The SDK sends DELETE /api/delete with {"name": ...} (Ollama's older field name).
  assert.deepEqual(await ollama.delete({ model: copy }), { status: 'success' });
  const after = (await ollama.list()).models.map((m) => m.name);
  assert.ok(!after.includes(`${copy}:latest`) && after.includes(MODEL), `list after delete: ${after}`);
  await assert.rejects(ollama.chat({ model: copy, messages: [{ role: 'user', content: 'Hi' }], stream: false }),
    (err) => err.name === 'ResponseError' && err.status_code === 404);
  await assert.rejects(ollama.delete({ model: copy }),
    (err) => err.name === 'ResponseError' && err.status_code === 404);
  await assert.rejects(ollama.copy({ source: 'no-such-model', destination: 'x' }),
    (err) => err.name === 'ResponseError' && err.status_code === 404);
});
