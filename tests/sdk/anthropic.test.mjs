// herd's Anthropic Messages API through the official `@anthropic-ai/sdk` npm SDK: messages whole
// and streamed (raw events and the MessageStream helper), count_tokens, prompt-caching usage, errors.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import { startHerd, stopHerd, MODEL, LONG_SYSTEM } from './herd.mjs';

let herd;
let client;

before(async () => {
  herd = await startHerd();
  client = new Anthropic({ baseURL: herd.url, apiKey: 'unused', maxRetries: 0, timeout: 30000 });
});

after(async () => {
  await stopHerd(herd);
});

const messages = [{ role: 'user', content: 'Say hello.' }];

function checkUsage(u) {
  for (const k of ['input_tokens', 'output_tokens', 'cache_creation_input_tokens', 'cache_read_input_tokens']) {
    assert.ok(Number.isInteger(u[k]) && u[k] >= 0, `usage.${k} = ${u[k]}`);
  }
}

// stop_reason "max_tokens" means exactly max_tokens were generated; "end_turn" (EOS) means fewer or equal.
function checkStop(msg, maxTokens) {
  assert.ok(msg.stop_reason === 'max_tokens' || msg.stop_reason === 'end_turn', `stop_reason ${msg.stop_reason}`);
  if (msg.stop_reason === 'max_tokens') assert.equal(msg.usage.output_tokens, maxTokens);
  else assert.ok(msg.usage.output_tokens <= maxTokens);
  assert.equal(msg.stop_sequence, null);
}

test('messages.create, whole response', async () => {
  const max = 8;
  const msg = await client.messages.create({ model: MODEL, max_tokens: max, system: 'You are terse.', messages });
  assert.equal(msg.type, 'message');
  assert.match(msg.id, /^msg_/);
  assert.equal(msg.role, 'assistant');
  assert.equal(msg.model, MODEL);
  assert.equal(msg.content.length, 1);
  assert.equal(msg.content[0].type, 'text');
  assert.equal(typeof msg.content[0].text, 'string');
  checkUsage(msg.usage);
  checkStop(msg, max);
  const { input_tokens } = await client.messages.countTokens({ model: MODEL, system: 'You are terse.', messages });
  const u = msg.usage;
  assert.equal(u.input_tokens + u.cache_creation_input_tokens + u.cache_read_input_tokens, input_tokens,
    'input + cache_creation + cache_read = the whole prompt (count_tokens)');
});

test('messages.countTokens', async () => {
  const short = await client.messages.countTokens({ model: MODEL, messages });
  assert.ok(Number.isInteger(short.input_tokens) && short.input_tokens > 0);
  const longer = await client.messages.countTokens({
    model: MODEL, system: [{ type: 'text', text: LONG_SYSTEM }],
    messages: [...messages, { role: 'assistant', content: 'Hello.' }, { role: 'user', content: 'Again.' }],
  });
  assert.ok(longer.input_tokens > short.input_tokens);
});

test('messages.create stream: raw event sequence', async () => {
  const max = 5;
  const stream = await client.messages.create({ model: MODEL, max_tokens: max, messages, stream: true });
  const events = [];
  for await (const ev of stream) events.push(ev);
  const types = events.map((e) => e.type);
  assert.deepEqual(types.slice(0, 2), ['message_start', 'content_block_start']);
  assert.deepEqual(types.slice(-3), ['content_block_stop', 'message_delta', 'message_stop']);
  const middle = types.slice(2, -3);
  assert.ok(middle.every((t) => t === 'content_block_delta'), `only deltas in between: ${types.join(' ')}`);
  const start = events[0].message;
  assert.match(start.id, /^msg_/);
  assert.equal(start.model, MODEL);
  assert.deepEqual(start.content, []);
  assert.equal(start.stop_reason, null);
  assert.equal(events[1].index, 0);
  assert.deepEqual(events[1].content_block, { type: 'text', text: '' });
  for (const d of events.slice(2, -3)) {
    assert.equal(d.index, 0);
    assert.equal(d.delta.type, 'text_delta');
    assert.equal(typeof d.delta.text, 'string');
  }
  assert.equal(events.at(-3).index, 0);
  const delta = events.at(-2);
  assert.ok(['max_tokens', 'end_turn'].includes(delta.delta.stop_reason));
  assert.ok(delta.usage.output_tokens <= max && delta.usage.output_tokens >= middle.length);
});

test('messages.stream helper: events and finalMessage', async () => {
  const max = 6;
  const stream = client.messages.stream({ model: MODEL, max_tokens: max, messages });
  const seen = [];
  let text = '';
  stream.on('streamEvent', (ev) => seen.push(ev.type));
  stream.on('text', (delta) => { text += delta; });
  const msg = await stream.finalMessage();
  assert.equal(seen[0], 'message_start');
  assert.equal(seen.at(-1), 'message_stop');
  assert.ok(seen.includes('message_delta'));
  assert.equal(msg.type, 'message');
  assert.equal(msg.content.length, 1);
  assert.equal(msg.content[0].text, text);
  checkUsage(msg.usage);
  checkStop(msg, max);
  const { input_tokens } = await client.messages.countTokens({ model: MODEL, messages });
  const u = msg.usage;
  assert.equal(u.input_tokens + u.cache_creation_input_tokens + u.cache_read_input_tokens, input_tokens);
});

// Clients such as LangChain take input usage from message_start and output usage from
// message_delta, so message_start must already split the prompt by the prefix-cache hit.
test('stream: message_start usage agrees with message_delta usage on a cache hit', async () => {
  const req = { model: MODEL, max_tokens: 2, messages, stream: true };
  for await (const ev of await client.messages.create(req)); // warm the prefix cache
  const events = [];
  for await (const ev of await client.messages.create(req)) events.push(ev);
  const start = events[0].message.usage;
  const end = events.find((e) => e.type === 'message_delta').usage;
  assert.ok(end.cache_read_input_tokens > 0, 'the repeated prompt hits the prefix cache');
  assert.equal(start.input_tokens, end.input_tokens);
  assert.equal(start.cache_read_input_tokens, end.cache_read_input_tokens);
});

test('stop_sequences end the message with stop_reason stop_sequence', async () => {
  const req = { model: MODEL, max_tokens: 12, temperature: 0, messages };
  const full = (await client.messages.create(req)).content[0].text;
  const chars = [...full];
  const at = chars.findIndex((ch, i) => i >= 2 && ch.trim() !== '' && ch !== '\uFFFD');
  if (at < 0) return; // nothing printable to stop on in this output
  const msg = await client.messages.create({ ...req, stop_sequences: [chars[at]] });
  assert.equal(msg.stop_reason, 'stop_sequence');
  assert.equal(msg.stop_sequence, chars[at]);
  assert.ok(full.startsWith(msg.content[0].text));
});

const cachedSystem = [{ type: 'text', text: LONG_SYSTEM, cache_control: { type: 'ephemeral' } }];

test('cache_control: cache creation, then cache read', async () => {
  const system = cachedSystem;
  const first = await client.messages.create({ model: MODEL, max_tokens: 2, system, messages });
  checkUsage(first.usage);
  assert.ok(first.usage.cache_creation_input_tokens > 0, 'the first request writes the cache');
  const second = await client.messages.create({
    model: MODEL, max_tokens: 2, system, messages: [{ role: 'user', content: 'Something else.' }],
  });
  checkUsage(second.usage);
  assert.ok(second.usage.cache_read_input_tokens > 0, 'the second request reads the cached system prompt');
  const { input_tokens } = await client.messages.countTokens({
    model: MODEL, system, messages: [{ role: 'user', content: 'Something else.' }],
  });
  const u = second.usage;
  assert.equal(u.input_tokens + u.cache_creation_input_tokens + u.cache_read_input_tokens, input_tokens);
});

// Anthropic's usage: the whole prompt is input_tokens + cache_creation_input_tokens +
// cache_read_input_tokens, each token counted once.
test('cache_control: usage adds up when the cache is written', async () => {
  const system = [{ type: 'text', text: `Fresh prefix. ${LONG_SYSTEM}`, cache_control: { type: 'ephemeral' } }];
  const msg = await client.messages.create({ model: MODEL, max_tokens: 2, system, messages });
  const { input_tokens } = await client.messages.countTokens({ model: MODEL, system, messages });
  const u = msg.usage;
  assert.ok(u.cache_creation_input_tokens > 0);
  assert.equal(u.input_tokens + u.cache_creation_input_tokens + u.cache_read_input_tokens, input_tokens,
    `input + cache_creation + cache_read = count_tokens (${JSON.stringify(u)}, count ${input_tokens})`);
});

test('content blocks, multi-turn, sampling parameters and metadata', async () => {
  const msg = await client.messages.create({
    model: MODEL, max_tokens: 3, temperature: 0.8, top_p: 0.9, top_k: 20, metadata: { user_id: 'sdk-test' },
    system: [{ type: 'text', text: 'You are terse.' }],
    messages: [
      { role: 'user', content: [{ type: 'text', text: 'Hi' }, { type: 'text', text: ' there.' }] },
      { role: 'assistant', content: 'Hello.' },
      { role: 'user', content: 'Again.' },
    ],
  });
  assert.equal(msg.content[0].type, 'text');
  checkStop(msg, 3);
});

test('missing max_tokens is a BadRequestError (400)', async () => {
  await assert.rejects(client.messages.create({ model: MODEL, messages }), (err) => {
    assert.ok(err instanceof Anthropic.BadRequestError, `${err?.constructor?.name}: ${err}`);
    assert.equal(err.status, 400);
    assert.equal(err.error.type, 'error');
    assert.equal(err.error.error.type, 'invalid_request_error');
    assert.match(err.error.error.message, /max_tokens/);
    return true;
  });
});

test('unknown model is a NotFoundError (404)', async () => {
  await assert.rejects(client.messages.create({ model: 'no-such-model', max_tokens: 2, messages }), (err) => {
    assert.ok(err instanceof Anthropic.NotFoundError, `${err?.constructor?.name}: ${err}`);
    assert.equal(err.status, 404);
    assert.equal(err.error.type, 'error');
    assert.equal(err.error.error.type, 'not_found_error');
    return true;
  });
});

test('invalid request shapes are 400 in Anthropic\'s error shape', async () => {
  // Message roles are user and assistant only (system is a top-level field); max_tokens >= 1.
  await assert.rejects(
    client.messages.create({ model: MODEL, max_tokens: 2, messages: [{ role: 'system', content: 'x' }] }),
    Anthropic.BadRequestError);
  await assert.rejects(client.messages.create({ model: MODEL, max_tokens: 0, messages }), Anthropic.BadRequestError);
});
