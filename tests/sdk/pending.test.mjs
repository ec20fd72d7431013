// SDK tests for endpoints that are being built (issue 4): OpenAI /v1/completions and
// /v1/embeddings, Ollama embed, embeddings, show, ps, copy and delete. Written against the SDKs'
// documented behavior; not in run.sh's default list until the endpoints land. Run them with
//   tests/sdk/run.sh build/bin/herd pending.test.mjs
// and move each test into the matching <api>.test.mjs once it passes (see README.md).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { Ollama } from 'ollama';
import { startHerd, stopHerd, MODEL } from './herd.mjs';

let herd;
let openai;
let ollama;

before(async () => {
  herd = await startHerd();
  openai = new OpenAI({ baseURL: `${herd.url}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 30000 });
  ollama = new Ollama({ host: herd.url });
});

after(async () => {
  await stopHerd(herd);
});

const EMBEDDING_DIM = 256; // the tiny shape's embedding_length

function norm(v) {
  return Math.sqrt(v.reduce((s, x) => s + x * x, 0));
}

function assertClose(a, b, tol, what) {
  assert.equal(a.length, b.length, `${what}: lengths`);
  for (let i = 0; i < a.length; i++) assert.ok(Math.abs(a[i] - b[i]) <= tol, `${what}[${i}]: ${a[i]} vs ${b[i]}`);
}

// ---- OpenAI /v1/completions ----

test('openai completions.create, whole response', async () => {
  const c = await openai.completions.create({ model: MODEL, prompt: 'Once upon a time', max_tokens: 6 });
  assert.equal(c.object, 'text_completion');
  assert.match(c.id, /^cmpl-/);
  assert.equal(c.model, MODEL);
  assert.ok(Number.isInteger(c.created));
  assert.equal(c.choices.length, 1);
  const [ch] = c.choices;
  assert.equal(ch.index, 0);
  assert.equal(typeof ch.text, 'string');
  assert.equal(ch.logprobs, null);
  assert.ok(['length', 'stop'].includes(ch.finish_reason));
  if (ch.finish_reason === 'length') assert.equal(c.usage.completion_tokens, 6);
  assert.equal(c.usage.total_tokens, c.usage.prompt_tokens + c.usage.completion_tokens);
});

test('openai completions: array prompt, n, echo, logprobs', async () => {
  const c = await openai.completions.create({ model: MODEL, prompt: ['One', 'Two'], max_tokens: 3, n: 2, seed: 5 });
  // Choices for prompt i are indices i*n .. i*n+n-1.
  assert.deepEqual(c.choices.map((x) => x.index), [0, 1, 2, 3]);
  assert.ok(c.usage.completion_tokens <= 12);

  const greedy = { model: MODEL, prompt: 'Echo me', max_tokens: 4, temperature: 0 };
  const plain = await openai.completions.create(greedy);
  const echoed = await openai.completions.create({ ...greedy, echo: true });
  assert.equal(echoed.choices[0].text, 'Echo me' + plain.choices[0].text);

  const lp = await openai.completions.create({ ...greedy, logprobs: 2 });
  const l = lp.choices[0].logprobs;
  assert.equal(l.tokens.length, lp.usage.completion_tokens);
  assert.equal(l.token_logprobs.length, l.tokens.length);
  assert.equal(l.top_logprobs.length, l.tokens.length);
  assert.equal(l.text_offset.length, l.tokens.length);
  assert.equal(l.tokens.join(''), lp.choices[0].text);
  for (let i = 0; i < l.tokens.length; i++) {
    assert.ok(l.token_logprobs[i] <= 0);
    assert.ok(Object.keys(l.top_logprobs[i]).length <= 2);
  }
});

test('openai completions stream with include_usage', async () => {
  const stream = await openai.completions.create({
    model: MODEL, prompt: 'Once upon a time', max_tokens: 5, stream: true, stream_options: { include_usage: true },
  });
  const chunks = [];
  for await (const c of stream) chunks.push(c);
  const id = chunks[0].id;
  for (const c of chunks) {
    assert.equal(c.object, 'text_completion');
    assert.equal(c.id, id);
  }
  const last = chunks.at(-1);
  assert.deepEqual(last.choices, []);
  assert.ok(last.usage.completion_tokens <= 5);
  assert.equal(last.usage.total_tokens, last.usage.prompt_tokens + last.usage.completion_tokens);
  const finishes = chunks.flatMap((c) => c.choices.filter((x) => x.finish_reason != null));
  assert.equal(finishes.length, 1);
  const whole = await openai.completions.create({ model: MODEL, prompt: 'Once upon a time', max_tokens: 5, temperature: 0 });
  let text = '';
  for await (const c of await openai.completions.create({
    model: MODEL, prompt: 'Once upon a time', max_tokens: 5, temperature: 0, stream: true,
  })) text += c.choices.map((x) => x.text).join('');
  assert.equal(text, whole.choices[0].text);
});

test('openai completions errors', async () => {
  await assert.rejects(openai.completions.create({ model: 'no-such-model', prompt: 'x', max_tokens: 1 }),
    OpenAI.NotFoundError);
  await assert.rejects(openai.completions.create({ model: MODEL, prompt: 'x', max_tokens: 1, temperature: 'hot' }),
    OpenAI.BadRequestError);
});

// ---- OpenAI /v1/embeddings ----

test('openai embeddings.create (default: the SDK asks for base64 and decodes float32)', async () => {
  // Without encoding_format the SDK sends encoding_format: "base64" and decodes little-endian
  // float32; a server that ignores it and returns numbers gives silently wrong vectors.
  const e = await openai.embeddings.create({ model: MODEL, input: 'The quick brown fox' });
  assert.equal(e.object, 'list');
  assert.equal(e.model, MODEL);
  assert.equal(e.data.length, 1);
  assert.equal(e.data[0].object, 'embedding');
  assert.equal(e.data[0].index, 0);
  const v = e.data[0].embedding;
  assert.equal(v.length, EMBEDDING_DIM);
  assert.ok(v.every(Number.isFinite));
  assert.ok(Math.abs(norm(v) - 1) < 1e-4, `normalized: |v| = ${norm(v)}`);
  assert.ok(e.usage.prompt_tokens > 0);
  assert.equal(e.usage.total_tokens, e.usage.prompt_tokens);
  const f = await openai.embeddings.create({ model: MODEL, input: 'The quick brown fox', encoding_format: 'float' });
  assert.ok(Array.isArray(f.data[0].embedding));
  assertClose(f.data[0].embedding.map(Math.fround), v, 0, 'base64 decodes to the float vector');
});

test('openai embeddings: batch input keeps order and matches single inputs', async () => {
  const inputs = ['alpha', 'a longer second input', 'gamma'];
  const batch = await openai.embeddings.create({ model: MODEL, input: inputs, encoding_format: 'float' });
  assert.deepEqual(batch.data.map((d) => d.index), [0, 1, 2]);
  for (let i = 0; i < inputs.length; i++) {
    const one = await openai.embeddings.create({ model: MODEL, input: inputs[i], encoding_format: 'float' });
    assertClose(batch.data[i].embedding, one.data[0].embedding, 1e-4, `input ${i}`);
  }
  assert.ok(batch.data[0].embedding.some((x, j) => Math.abs(x - batch.data[2].embedding[j]) > 1e-3),
    'different inputs give different vectors');
  // Token-id input (array of integers) is part of the API too.
  const ids = await openai.embeddings.create({ model: MODEL, input: [1, 2, 3], encoding_format: 'float' });
  assert.equal(ids.data[0].embedding.length, EMBEDDING_DIM);
  assert.equal(ids.usage.prompt_tokens, 3);
});

test('openai embeddings errors', async () => {
  await assert.rejects(openai.embeddings.create({ model: 'no-such-model', input: 'x' }), OpenAI.NotFoundError);
  await assert.rejects(openai.embeddings.create({ model: MODEL, input: '' , encoding_format: 'float' }),
    OpenAI.BadRequestError);
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
  const o = await openai.embeddings.create({ model: MODEL, input: 'The quick brown fox', encoding_format: 'float' });
  assertClose(o.data[0].embedding, one.embeddings[0], 1e-4, 'ollama vs openai');
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

// ---- Ollama show / ps / copy / delete ----

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
  assert.ok(listed.includes(copy) && listed.includes(MODEL), `list after copy: ${listed}`);
  const r = await ollama.chat({ model: copy, messages: [{ role: 'user', content: 'Hi' }], stream: false,
    options: { num_predict: 1 } });
  assert.equal(r.done, true);
  // The SDK sends DELETE /api/delete with {"name": ...} (Ollama's older field name).
  assert.deepEqual(await ollama.delete({ model: copy }), { status: 'success' });
  const after = (await ollama.list()).models.map((m) => m.name);
  assert.ok(!after.includes(copy) && after.includes(MODEL), `list after delete: ${after}`);
  await assert.rejects(ollama.chat({ model: copy, messages: [{ role: 'user', content: 'Hi' }], stream: false }),
    (err) => err.name === 'ResponseError' && err.status_code === 404);
  await assert.rejects(ollama.delete({ model: copy }),
    (err) => err.name === 'ResponseError' && err.status_code === 404);
  await assert.rejects(ollama.copy({ source: 'no-such-model', destination: 'x' }),
    (err) => err.name === 'ResponseError' && err.status_code === 404);
});
