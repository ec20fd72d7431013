// Embedding requests: the engine runs the prompt only — as prefill chunks scheduled with the
// same token budget, priorities, limits and preemption as generation — and pools the final
// hidden states (Model::Embed: after the final norm) instead of sampling.
//
//   auto stream = engine->SubmitEmbedding({tokens, Pooling::kMean});
//   // one kFinished event: finish kStop with `embedding` ([n_embd]) and usage.prompt_tokens,
//   // or kCancelled / kError without it.
//
// Embedding sequences never take blocks from the prefix cache (mean pooling needs every row's
// hidden state) and never register theirs in it; their blocks are freed when they finish.
#pragma once

#include <cstdint>
#include <vector>

namespace herd {

// How a sequence's hidden states become one vector (GGUF `<arch>.pooling_type`: 1 mean, 2 cls,
// 3 last).
enum class Pooling { kMean, kCls, kLast };
const char* PoolingName(Pooling pooling);

struct EmbeddingRequest {
  std::vector<int32_t> prompt;  // token ids; must not be empty
  Pooling pooling = Pooling::kMean;
  bool normalize = true;  // L2-normalize the pooled vector
  // Keep the first n_ctx tokens of a longer prompt instead of failing with OutOfRange.
  bool truncate = false;
  int32_t priority = 0;
};

// Pools `rows` ([n_rows, n_embd], the hidden states of positions first_pos.. of one sequence)
// into `sum` ([n_embd], double): kMean adds every row; kCls takes position 0, kLast position
// n_prompt - 1 (rows not at those positions are ignored).
void PoolRows(Pooling pooling, const float* rows, int32_t n_rows, int32_t first_pos, int32_t n_prompt, int32_t n_embd,
              std::vector<double>* sum);
// The final vector: the mean divides by n_prompt; L2-normalized when `normalize` (a zero vector
// stays zero).
std::vector<float> FinishPooling(Pooling pooling, const std::vector<double>& sum, int32_t n_prompt, bool normalize);

}  // namespace herd
