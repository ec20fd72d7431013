// SDK tests for endpoints that are being built (issue 4): Ollama show, ps, copy and delete.
// Written against the SDKs' documented behavior; not in run.sh's default list until the endpoints
// land. Run them with
//   tests/sdk/run.sh build/bin/herd pending.test.mjs
// and move each test into the matching <api>.test.mjs once it passes (see README.md).
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
