// Hyper-parameters of a decoder-only transformer, read from GGUF metadata
// (`<arch>.embedding_length`, `<arch>.block_count`, ...). Architecture-neutral: each
// architecture file reads the keys it needs and validates them.
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"

namespace herd {

class GgufFile;

struct ModelConfig {
  std::string arch;          // general.architecture ("llama")
  std::string name;          // general.name, if any
  int32_t n_vocab = 0;       // rows of token_embd
  int32_t n_ctx_train = 0;   // <arch>.context_length
  int32_t n_embd = 0;        // <arch>.embedding_length
  int32_t n_layer = 0;       // <arch>.block_count
  int32_t n_head = 0;        // <arch>.attention.head_count
  int32_t n_head_kv = 0;     // <arch>.attention.head_count_kv (defaults to n_head)
  int32_t head_dim = 0;      // <arch>.attention.key_length or n_embd / n_head
  int32_t n_ff = 0;          // <arch>.feed_forward_length
  float rms_eps = 1e-5f;     // <arch>.attention.layer_norm_rms_epsilon
  float rope_freq_base = 10000.f;  // <arch>.rope.freq_base
  float rope_freq_scale = 1.f;     // 1 / <arch>.rope.scaling.factor for linear scaling
  int32_t n_rot = 0;               // <arch>.rope.dimension_count (defaults to head_dim)
  bool tied_output = false;        // no output.weight: token_embd is reused
  bool has_rope_freqs = false;     // rope_freqs.weight present (llama3-style frequency factors)

  int32_t q_dim() const { return n_head * head_dim; }
  int32_t kv_dim() const { return n_head_kv * head_dim; }
  std::string Describe() const;  // one line for logs and `herd run`
};

// Reads the hyper-parameters common to llama-like architectures under the `arch.` prefix.
Result<ModelConfig> ReadLlamaLikeConfig(const GgufFile& file, const std::string& arch);

}  // namespace herd
