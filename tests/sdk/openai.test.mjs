// herd's OpenAI API through the official `openai` npm SDK: model listing, chat completions whole
// and streamed, legacy completions, embeddings, limits, errors.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startHerd, stopHerd, MODEL } from './herd.mjs';

let herd;
let client;

before(async () => {
  herd = await startHerd();
  client = new OpenAI({ baseURL: `${herd.url}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 30000 });
});

after(async () => {
  await stopHerd(herd);
});

const messages = [
  { role: 'system', content: 'You are terse.' },
  { role: 'user', content: 'Say hello.' },
];

// finish_reason "length" means exactly max_tokens were generated; "stop" (EOS) means fewer or equal.
function checkFinish(finish, completionTokens, maxTokens) {
  assert.ok(finish === 'length' || finish === 'stop', `finish_reason ${finish}`);
  if (finish === 'length') assert.equal(completionTokens, maxTokens);
  else assert.ok(completionTokens <= maxTokens);
}

const EMBEDDING_DIM = 256; // the tiny shape's embedding_length

function norm(v) {
  return Math.sqrt(v.reduce((s, x) => s + x * x, 0));
}

function assertClose(a, b, tol, what) {
  assert.equal(a.length, b.length, `${what}: lengths`);
  for (let i = 0; i < a.length; i++) assert.ok(Math.abs(a[i] - b[i]) <= tol, `${what}[${i}]: ${a[i]} vs ${b[i]}`);
}

test('models.list and models.retrieve', async () => {
  const page = await client.models.list();
  const ids = [];
  for await (const m of page) {
    assert.equal(m.object, 'model');
    assert.equal(typeof m.created, 'number');
    assert.equal(typeof m.owned_by, 'string');
    ids.push(m.id);
  }
  assert.deepEqual(ids, [MODEL]);
  const m = await client.models.retrieve(MODEL);
  assert.equal(m.id, MODEL);
  assert.equal(m.object, 'model');
  assert.ok(Number.isInteger(m.created) && m.created > 1.6e9, `created ${m.created} is a Unix time in seconds`);
});

test('chat.completions.create, whole response', async () => {
  const max = 8;
  const c = await client.chat.completions.create({ model: MODEL, messages, max_tokens: max, temperature: 0.7, seed: 1 });
  assert.equal(c.object, 'chat.completion');
  assert.match(c.id, /^chatcmpl-/);
  assert.equal(c.model, MODEL);
  assert.ok(Number.isInteger(c.created));
  assert.equal(c.choices.length, 1);
  const [choice] = c.choices;
  assert.equal(choice.index, 0);
  assert.equal(choice.message.role, 'assistant');
  assert.equal(typeof choice.message.content, 'string');
  const u = c.usage;
  assert.ok(u.prompt_tokens > 0);
  assert.equal(u.total_tokens, u.prompt_tokens + u.completion_tokens);
  checkFinish(choice.finish_reason, u.completion_tokens, max);
  assert.ok(u.prompt_tokens_details.cached_tokens >= 0 && u.prompt_tokens_details.cached_tokens <= u.prompt_tokens);
});

test('max_completion_tokens and n > 1', async () => {
  const c = await client.chat.completions.create({ model: MODEL, messages, max_completion_tokens: 5, n: 2, seed: 3 });
  assert.deepEqual(c.choices.map((ch) => ch.index), [0, 1]);
  for (const ch of c.choices) assert.ok(ch.finish_reason === 'length' || ch.finish_reason === 'stop');
  assert.ok(c.usage.completion_tokens <= 10);
  assert.equal(c.usage.total_tokens, c.usage.prompt_tokens + c.usage.completion_tokens);
});

test('greedy decoding is repeatable and the prefix cache is reported', async () => {
  const req = { model: MODEL, messages, max_tokens: 6, temperature: 0 };
  const a = await client.chat.completions.create(req);
  const b = await client.chat.completions.create(req);
  assert.equal(b.choices[0].message.content, a.choices[0].message.content);
  assert.equal(b.usage.prompt_tokens, a.usage.prompt_tokens);
  assert.ok(b.usage.prompt_tokens_details.cached_tokens > 0, 'the second identical prompt hits the prefix cache');
});

test('chat.completions.create stream with include_usage', async () => {
  const max = 6;
  const stream = await client.chat.completions.create({
    model: MODEL, messages, max_tokens: max, stream: true, stream_options: { include_usage: true },
  });
  const chunks = [];
  for await (const chunk of stream) chunks.push(chunk);
  assert.ok(chunks.length >= 3, `${chunks.length} chunks`);
  const id = chunks[0].id;
  assert.match(id, /^chatcmpl-/);
  for (const ch of chunks) {
    assert.equal(ch.object, 'chat.completion.chunk');
    assert.equal(ch.id, id, 'one id for the whole stream');
    assert.equal(ch.model, MODEL);
  }
  assert.equal(chunks[0].choices[0].delta.role, 'assistant');
  const last = chunks.at(-1);
  assert.deepEqual(last.choices, [], 'the usage chunk has no choices');
  assert.ok(last.usage, 'the last chunk carries usage');
  for (const ch of chunks.slice(0, -1)) assert.equal(ch.usage ?? null, null, 'only the last chunk has usage');
  const finishes = chunks.flatMap((ch) => ch.choices.filter((c) => c.finish_reason != null));
  assert.equal(finishes.length, 1, 'exactly one chunk has a finish_reason');
  const text = chunks.flatMap((ch) => ch.choices.map((c) => c.delta.content ?? '')).join('');
  assert.equal(typeof text, 'string');
  assert.equal(last.usage.total_tokens, last.usage.prompt_tokens + last.usage.completion_tokens);
  checkFinish(finishes[0].finish_reason, last.usage.completion_tokens, max);
});

test('chat.completions.stream helper assembles the final completion', async () => {
  const stream = client.chat.completions.stream({
    model: MODEL, messages, max_tokens: 5, stream_options: { include_usage: true },
  });
  let deltas = '';
  stream.on('content.delta', ({ delta }) => { deltas += delta; });
  const final = await stream.finalChatCompletion();
  assert.equal(final.choices[0].message.role, 'assistant');
  assert.equal(final.choices[0].message.content, deltas);
  checkFinish(final.choices[0].finish_reason, final.usage.completion_tokens, 5);
});

test('streaming without include_usage has no usage chunk', async () => {
  const stream = await client.chat.completions.create({ model: MODEL, messages, max_tokens: 3, stream: true });
  const chunks = [];
  for await (const chunk of stream) chunks.push(chunk);
  for (const ch of chunks) {
    assert.equal(ch.usage ?? null, null);
    assert.equal(ch.choices.length, 1);
  }
  assert.ok(chunks.at(-1).choices[0].finish_reason);
});

test('stop strings end the completion with finish_reason stop', async () => {
  // Greedy: find what the model says, then stop on its third character onwards.
  const req = { model: MODEL, messages, max_tokens: 12, temperature: 0 };
  const full = (await client.chat.completions.create(req)).choices[0].message.content;
  const at = [...full].findIndex((ch, i) => i >= 2 && ch.trim() !== '' && ch !== '\uFFFD');
  if (at < 0) return; // nothing printable to stop on in this output
  const stop = [...full][at];
  const c = await client.chat.completions.create({ ...req, stop: [stop] });
  assert.equal(c.choices[0].finish_reason, 'stop');
  assert.ok(!c.choices[0].message.content.includes(stop), 'the stop string is not returned');
  assert.ok(full.startsWith(c.choices[0].message.content));
});

test('content parts, developer role and logprobs', async () => {
  const c = await client.chat.completions.create({
    model: MODEL, max_tokens: 4, temperature: 0, logprobs: true, top_logprobs: 3, user: 'sdk-test',
    messages: [
      { role: 'developer', content: 'You are terse.' },
      { role: 'user', content: [{ type: 'text', text: 'Say' }, { type: 'text', text: ' hello.' }] },
    ],
  });
  const [choice] = c.choices;
  const lp = choice.logprobs.content;
  assert.equal(lp.length, c.usage.completion_tokens, 'one logprob entry per generated token');
  // bytes are each token's UTF-8 bytes (a token may hold part of a character): together, the text.
  assert.equal(Buffer.from(lp.flatMap((t) => t.bytes)).toString('utf8'), choice.message.content);
  for (const t of lp) {
    assert.equal(typeof t.token, 'string');
    assert.ok(t.logprob <= 0);
    assert.ok(Array.isArray(t.bytes));
    assert.equal(t.top_logprobs.length, 3);
    // Greedy: the chosen token is the most likely one.
    assert.ok(t.top_logprobs.every((x) => x.logprob <= t.logprob + 1e-6));
    assert.equal(t.top_logprobs[0].token, t.token);
  }
});

// Byte-fallback tokens can hold part of a UTF-8 character. `token` must still be valid JSON text
// (herd once aborted on such a token); `bytes` carries the exact bytes. Sampling at a high
// temperature over a few seeds reaches such tokens with the tiny vocabulary. The test runs its own
// server so that a crash cannot take the other tests down with it.
test('logprobs on tokens that hold part of a character', async () => {
  const own = await startHerd();
  try {
    const c2 = new OpenAI({ baseURL: `${own.url}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 30000 });
    const wellFormed = (s) => Buffer.from(s, 'utf8').toString('utf8') === s;
    const strict = new TextDecoder('utf-8', { fatal: true });
    let partial = 0;
    for (let seed = 1; seed <= 12; seed++) {
      const c = await c2.chat.completions.create({
        model: MODEL, messages, max_tokens: 4, temperature: 1.5, seed, logprobs: true, top_logprobs: 2,
      });
      const lp = c.choices[0].logprobs.content;
      for (const t of [...lp, ...lp.flatMap((x) => x.top_logprobs)]) {
        assert.ok(wellFormed(t.token));
        try {
          assert.equal(strict.decode(Buffer.from(t.bytes)), t.token);
        } catch (e) {
          if (e instanceof assert.AssertionError) throw e;
          partial++;
        }
      }
      let whole;
      try {
        whole = strict.decode(Buffer.from(lp.flatMap((t) => t.bytes)));
      } catch {
        continue; // the output ends inside a character
      }
      assert.equal(whole, c.choices[0].message.content);
    }
    assert.ok(partial > 0, 'the sweep reached tokens with partial characters');
  } finally {
    await stopHerd(own);
  }
});

test('a stream aborted by the client leaves the server serving', async () => {
  const stream = await client.chat.completions.create({ model: MODEL, messages, max_tokens: 200, stream: true });
  let n = 0;
  for await (const chunk of stream) {
    assert.equal(chunk.object, 'chat.completion.chunk');
    if (++n === 2) break; // leaving the loop aborts the HTTP request
  }
  const c = await client.chat.completions.create({ model: MODEL, messages, max_tokens: 2 });
  assert.equal(c.choices.length, 1);
});

// Graceful shutdown: SIGTERM right after a response must still exit 0.
test('SIGTERM right after a response exits 0', async () => {
  for (let i = 0; i < 12; i++) {
    const own = await startHerd();
    const c2 = new OpenAI({ baseURL: `${own.url}/v1`, apiKey: 'unused', maxRetries: 0 });
    await c2.chat.completions.create({ model: MODEL, messages, max_tokens: 2 });
    await stopHerd(own);
  }
});

test('unknown model is a NotFoundError (404)', async () => {
  await assert.rejects(client.chat.completions.create({ model: 'no-such-model', messages, max_tokens: 2 }), (err) => {
    assert.ok(err instanceof OpenAI.NotFoundError, `${err?.constructor?.name}: ${err}`);
    assert.equal(err.status, 404);
    assert.equal(err.type, 'invalid_request_error');
    assert.equal(typeof err.error.message, 'string');
    return true;
  });
  await assert.rejects(client.models.retrieve('no-such-model'), OpenAI.NotFoundError);
});

test('bad parameters are a BadRequestError (400) naming the parameter', async () => {
  await assert.rejects(
    client.chat.completions.create({ model: MODEL, messages, max_tokens: 2, temperature: 'hot' }),
    (err) => {
      assert.ok(err instanceof OpenAI.BadRequestError, `${err?.constructor?.name}: ${err}`);
      assert.equal(err.status, 400);
      assert.equal(err.param, 'temperature');
      return true;
    });
  await assert.rejects(client.chat.completions.create({ model: MODEL, messages: [], max_tokens: 2 }),
    OpenAI.BadRequestError);
  // Tools are not supported yet: a 400 that names the parameter, never silently ignored.
  await assert.rejects(
    client.chat.completions.create({
      model: MODEL, messages, max_tokens: 2,
      tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object', properties: {} } } }],
    }),
    (err) => err instanceof OpenAI.BadRequestError && err.status === 400 && /tools/.test(err.message));
});

// ---- OpenAI /v1/completions ----

test('openai completions.create, whole response', async () => {
  const c = await client.completions.create({ model: MODEL, prompt: 'Once upon a time', max_tokens: 6 });
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
  const c = await client.completions.create({ model: MODEL, prompt: ['One', 'Two'], max_tokens: 3, n: 2, seed: 5 });
  // Choices for prompt i are indices i*n .. i*n+n-1.
  assert.deepEqual(c.choices.map((x) => x.index), [0, 1, 2, 3]);
  assert.ok(c.usage.completion_tokens <= 12);

  const greedy = { model: MODEL, prompt: 'Echo me', max_tokens: 4, temperature: 0 };
  const plain = await client.completions.create(greedy);
  const echoed = await client.completions.create({ ...greedy, echo: true });
  assert.equal(echoed.choices[0].text, 'Echo me' + plain.choices[0].text);

  const lp = await client.completions.create({ ...greedy, logprobs: 2 });
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
  const stream = await client.completions.create({
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
  const whole = await client.completions.create({ model: MODEL, prompt: 'Once upon a time', max_tokens: 5, temperature: 0 });
  let text = '';
  for await (const c of await client.completions.create({
    model: MODEL, prompt: 'Once upon a time', max_tokens: 5, temperature: 0, stream: true,
  })) text += c.choices.map((x) => x.text).join('');
  assert.equal(text, whole.choices[0].text);
});

test('openai completions errors', async () => {
  await assert.rejects(client.completions.create({ model: 'no-such-model', prompt: 'x', max_tokens: 1 }),
    OpenAI.NotFoundError);
  await assert.rejects(client.completions.create({ model: MODEL, prompt: 'x', max_tokens: 1, temperature: 'hot' }),
    OpenAI.BadRequestError);
});

// ---- OpenAI /v1/embeddings ----

test('openai embeddings.create (default: the SDK asks for base64 and decodes float32)', async () => {
  // Without encoding_format the SDK sends encoding_format: "base64" and decodes little-endian
  // float32; a server that ignores it and returns numbers gives silently wrong vectors.
  const e = await client.embeddings.create({ model: MODEL, input: 'The quick brown fox' });
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
  const f = await client.embeddings.create({ model: MODEL, input: 'The quick brown fox', encoding_format: 'float' });
  assert.ok(Array.isArray(f.data[0].embedding));
  assertClose(f.data[0].embedding.map(Math.fround), v, 0, 'base64 decodes to the float vector');
});

test('openai embeddings: batch input keeps order and matches single inputs', async () => {
  const inputs = ['alpha', 'a longer second input', 'gamma'];
  const batch = await client.embeddings.create({ model: MODEL, input: inputs, encoding_format: 'float' });
  assert.deepEqual(batch.data.map((d) => d.index), [0, 1, 2]);
  for (let i = 0; i < inputs.length; i++) {
    const one = await client.embeddings.create({ model: MODEL, input: inputs[i], encoding_format: 'float' });
    assertClose(batch.data[i].embedding, one.data[0].embedding, 1e-4, `input ${i}`);
  }
  assert.ok(batch.data[0].embedding.some((x, j) => Math.abs(x - batch.data[2].embedding[j]) > 1e-3),
    'different inputs give different vectors');
  // Token-id input (array of integers) is part of the API too.
  const ids = await client.embeddings.create({ model: MODEL, input: [1, 2, 3], encoding_format: 'float' });
  assert.equal(ids.data[0].embedding.length, EMBEDDING_DIM);
  assert.equal(ids.usage.prompt_tokens, 3);
});

test('openai embeddings errors', async () => {
  await assert.rejects(client.embeddings.create({ model: 'no-such-model', input: 'x' }), OpenAI.NotFoundError);
  await assert.rejects(client.embeddings.create({ model: MODEL, input: '' , encoding_format: 'float' }),
    OpenAI.BadRequestError);
});
