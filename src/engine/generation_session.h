// One sequence decoded on its own over a paged KV cache: the minimal driver used by
// `herd run` and `herd bench-model`. The continuous-batching engine (Scheduler,
// KvCacheManager) builds on the same Model/KvCache interfaces for many sequences.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "base/status.h"
#include "kv/kv_cache.h"
#include "model/model.h"
#include "sampling/sampler.h"

namespace herd {

class GenerationSession {
 public:
  // n_batch: most tokens per forward pass while prefilling (chunked prefill).
  GenerationSession(Model* model, KvCache* cache, int32_t n_batch = 512);
  ~GenerationSession();

  // Appends tokens to the sequence, running the model in chunks of n_batch. If `logits` is
  // non-null it receives the last token's logits [n_vocab]. Errors: context full (no free
  // block), invalid token ids.
  Status Append(const std::vector<int32_t>& tokens, float* logits);
  // The same, returning only the last token's greedy choice (first index of the largest logit)
  // in *next: on a GPU the argmax runs there and 4 bytes come back instead of n_vocab floats.
  Status AppendGreedy(const std::vector<int32_t>& tokens, int32_t* next);

  // Greedy decoding of n tokens: step 0 feeds `first`, step i the choice of step i - 1; the n
  // choices go to *out. Where the model queues passes (Model::CanQueue, pipelined decoding as the
  // engine runs it), each step is queued before the previous step's choice reaches the host, so
  // the device never waits for the host between steps; otherwise (or with `sync`) one step at a
  // time, as AppendGreedy. The appended tokens are `first` and the first n - 1 choices.
  Status DecodeGreedy(int32_t first, int32_t n, bool sync, std::vector<int32_t>* out);

  // Frees all blocks; the next Append starts at position 0.
  void Reset();

  int32_t n_past() const { return n_past_; }
  const std::vector<int32_t>& tokens() const { return tokens_; }

 private:
  Status EnsureBlocks(int32_t n_positions);
  // Room for n_more positions after n_past: within the model's context, blocks allocated.
  Status Reserve(int32_t n_more);
  Status AppendChunks(const std::vector<int32_t>& tokens, float* logits, int32_t* argmax);

  Model* model_;
  KvCache* cache_;
  BlockAllocator allocator_;
  int32_t n_batch_;
  int32_t n_past_ = 0;
  std::vector<int32_t> block_table_;
  std::vector<int32_t> tokens_;
};

struct GenerateOptions {
  int32_t max_tokens = 128;
  bool stop_at_eos = true;
};

// Feeds `prompt`, then samples up to max_tokens tokens, calling on_token(id) for each (return
// false to stop). Stops at a stop token of the sampler unless !stop_at_eos.
Status Generate(GenerationSession& session, Sampler& sampler, const std::vector<int32_t>& prompt,
                const GenerateOptions& options, const std::function<bool(int32_t)>& on_token);

}  // namespace herd
