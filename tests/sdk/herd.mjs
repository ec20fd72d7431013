// Starts `herd serve` on a freshly generated tiny random-weight model for the SDK tests.
//
// HERD_BIN names the herd binary (run.sh sets it). Each test file calls startHerd() once in a
// before() hook: the model (about 1.4 MiB, herd's built-in 653-token vocabulary, no chat template
// so the documented ChatML fallback applies) is written into a fresh temp dir, the server binds
// port 0 and the port is read from its "herd serving ... at http://HOST:PORT" line. stop() sends
// SIGTERM and resolves with the exit code (graceful shutdown must exit 0).
import { spawn, execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import assert from 'node:assert/strict';

export const MODEL = 'herd-sdk-tiny';

export function herdBin() {
  const bin = process.env.HERD_BIN;
  if (!bin) throw new Error('HERD_BIN must name the herd binary (tests/sdk/run.sh sets it)');
  return bin;
}

export async function startHerd(extraArgs = []) {
  const bin = herdBin();
  const dir = mkdtempSync(join(tmpdir(), 'herd-sdk-'));
  const model = join(dir, 'tiny.gguf');
  execFileSync(bin, ['make-model', '--shape', 'tiny', '--type', 'Q8_0', '--seed', '7', '-t', '1', '-o', model], {
    stdio: 'pipe',
  });
  // An empty Ollama store of its own (herd serves ~/.ollama/models by default; /api/copy and
  // /api/delete write there) and no HERD_* settings from the caller's environment.
  const store = join(dir, 'ollama-models');
  mkdirSync(store);
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('HERD_') && k !== 'OLLAMA_MODELS'));
  const args = ['serve', '-m', model, '--alias', MODEL, '--ollama-models', store, '--host', '127.0.0.1', '--port', '0',
    '-t', '1', '-c', '1024', '--io-threads', '1', ...extraArgs];
  const child = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'], env });
  let log = '';
  child.stderr.on('data', (d) => { log += d; });
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve(code ?? signal)));
  // The banner line: "herd serving <model(s)> at http://HOST:PORT ...".
  const url = await new Promise((resolve, reject) => {
    let out = '';
    const fail = (why) => {
      child.kill('SIGKILL');
      reject(new Error(`${why}:\n${out}${log}`));
    };
    const timer = setTimeout(() => fail('herd did not start within 30 s'), 30000);
    child.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/^herd serving .* at (http:\/\/[0-9.]+:[0-9]+)/m);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
    exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`herd exited (${code}) before serving:\n${out}${log}`));
    });
  }).catch(async (err) => {
    await exited;
    rmSync(dir, { recursive: true, force: true });
    throw err;
  });
  child.stdout.resume();
  return {
    url,
    log: () => log,
    async stop() {
      child.kill('SIGTERM');
      // herd gives in-flight requests up to 10 s; past 20 s it is hung: kill it and report that.
      let timer;
      const hung = new Promise((resolve) => {
        timer = setTimeout(() => { child.kill('SIGKILL'); resolve('no exit within 20 s of SIGTERM'); }, 20000);
      });
      const code = await Promise.race([exited, hung]);
      clearTimeout(timer);
      rmSync(dir, { recursive: true, force: true });
      return code;
    },
  };
}

// A prompt long enough to cover several KV blocks with the tiny vocabulary (about 4 tokens per word).
export const LONG_SYSTEM = 'You are a careful assistant. ' + 'This sentence pads the system prompt. '.repeat(5);

// Stops a server started by startHerd() and asserts a clean exit (0), with its log on failure.
export async function stopHerd(herd) {
  if (!herd) return; // startHerd() failed; its error is reported already
  const code = await herd.stop();
  assert.equal(code, 0, `herd exits 0 on SIGTERM; its log ends:\n${herd.log().slice(-3000)}`);
}
