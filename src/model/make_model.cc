#include "model/make_model.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

#include "base/check.h"
#include "base/log.h"
#include "base/thread_pool.h"
#include "io/gguf.h"
#include "kernels/quants.h"
#include "model/model_shapes.h"

namespace herd {
namespace {

uint64_t SplitMix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint64_t HashName(const std::string& s, uint64_t seed) {
  uint64_t h = 1469598103934665603ull ^ seed;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

// A matrix [rows, cols] with uniform entries of standard deviation 1/sqrt(cols) (so
// activations keep their scale through the layers), quantized row by row.
GgufWriter::FillFn RandomMatrix(std::string name, DType type, int64_t rows, int64_t cols, uint64_t seed,
                                std::shared_ptr<ThreadPool> pool) {
  return [=](uint8_t* dst, uint64_t bytes) {
    const size_t row_bytes = RowBytes(type, cols);
    HERD_CHECK_EQ(row_bytes * static_cast<size_t>(rows), bytes);
    const uint64_t base = HashName(name, seed);
    const float amp = std::sqrt(3.0f / static_cast<float>(cols));
    pool->ParallelFor(rows, 16, [&](int64_t begin, int64_t end) {
      std::vector<float> row(static_cast<size_t>(cols));
      for (int64_t r = begin; r < end; ++r) {
        uint64_t state = base + static_cast<uint64_t>(r) * 0x632be59bd9b4e019ull;
        for (int64_t c = 0; c < cols; ++c) {
          const float u = static_cast<float>(SplitMix64(state) >> 40) * (1.0f / 16777216.0f);  // [0, 1)
          row[static_cast<size_t>(c)] = (2.0f * u - 1.0f) * amp;
        }
        ref::QuantizeRow(type, row.data(), dst + row_bytes * static_cast<size_t>(r), cols);
      }
    });
  };
}

GgufWriter::FillFn ConstantF32(std::vector<float> values) {
  return [values = std::move(values)](uint8_t* dst, uint64_t bytes) {
    HERD_CHECK_EQ(bytes, values.size() * sizeof(float));
    std::memcpy(dst, values.data(), bytes);
  };
}

// Copies tokenizer.* keys from a vocabulary file, padding the token list to n_vocab with
// reserved control tokens when the shape's vocabulary is larger (e.g. Llama 3's 128256).
Result<int32_t> CopyVocab(const std::string& path, int32_t n_vocab, GgufWriter& w) {
  HERD_ASSIGN_OR_RETURN(auto vocab, GgufFile::Open(path));
  HERD_ASSIGN_OR_RETURN(std::vector<std::string> tokens, vocab->GetStringArray("tokenizer.ggml.tokens"));
  const int32_t n_tokens = static_cast<int32_t>(tokens.size());
  const int32_t target = std::max(n_vocab, n_tokens);
  for (const auto& [key, value] : vocab->metadata()) {
    if (key.rfind("tokenizer.", 0) != 0) continue;
    GgufValue v = value;
    if (v.type == GgufType::kArray && static_cast<int32_t>(v.array.size()) == n_tokens && target > n_tokens) {
      for (int32_t i = n_tokens; i < target; ++i) {
        GgufValue item;
        item.type = v.array_type;
        if (key == "tokenizer.ggml.tokens") {
          item.str = StrFormat("<|reserved_special_token_%d|>", i - n_tokens);
        } else if (key == "tokenizer.ggml.token_type") {
          item.i = 3;  // CONTROL
          item.u = 3;
        }
        v.array.push_back(std::move(item));
      }
    }
    w.Set(key, std::move(v));
  }
  return target;
}

}  // namespace

Status MakeRandomModel(const MakeModelOptions& o) {
  auto shape_or = FindModelShape(o.shape);
  if (!shape_or) {
    std::string names;
    for (const auto& n : ModelShapeNames()) names += " " + n;
    return InvalidArgument(StrFormat("unknown shape '%s' (known:%s)", o.shape.c_str(), names.c_str()));
  }
  auto ftype_or = FindFileType(o.file_type);
  if (!ftype_or) {
    std::string names;
    for (const auto& n : FileTypeNames()) names += " " + n;
    return InvalidArgument(StrFormat("unknown file type '%s' (known:%s)", o.file_type.c_str(), names.c_str()));
  }
  if (o.output_path.empty()) return InvalidArgument("no output path given");
  const ModelShape& s = *shape_or;
  const FileType& ft = *ftype_or;
  GgufWriter w;
  int32_t n_vocab = 0;
  if (o.vocab_path.empty()) {
    n_vocab = std::max(s.n_vocab, WriteBuiltinVocab(w));
    if (n_vocab != s.n_vocab && s.n_vocab != 0) {
      return InvalidArgument("the built-in vocabulary is only for shapes without a fixed vocabulary size (tiny, small)");
    }
  } else {
    HERD_ASSIGN_OR_RETURN(n_vocab, CopyVocab(o.vocab_path, s.n_vocab, w));
  }
  const int32_t head_dim = s.n_embd / s.n_head;
  w.Set("general.architecture", GgufValue::Str("llama"));
  w.Set("general.name", GgufValue::Str("herd random " + s.name + " " + ft.name));
  w.Set("general.file_type", GgufValue::U32(ft.gguf_file_type));
  w.Set("general.quantized_by", GgufValue::Str("herd make-model"));
  w.Set("herd.random_seed", GgufValue::U64(o.seed));
  w.Set("llama.vocab_size", GgufValue::U32(static_cast<uint32_t>(n_vocab)));
  w.Set("llama.context_length", GgufValue::U32(static_cast<uint32_t>(s.n_ctx)));
  w.Set("llama.embedding_length", GgufValue::U32(static_cast<uint32_t>(s.n_embd)));
  w.Set("llama.block_count", GgufValue::U32(static_cast<uint32_t>(s.n_layer)));
  w.Set("llama.feed_forward_length", GgufValue::U32(static_cast<uint32_t>(s.n_ff)));
  w.Set("llama.attention.head_count", GgufValue::U32(static_cast<uint32_t>(s.n_head)));
  w.Set("llama.attention.head_count_kv", GgufValue::U32(static_cast<uint32_t>(s.n_head_kv)));
  w.Set("llama.attention.layer_norm_rms_epsilon", GgufValue::F32(s.rms_eps));
  w.Set("llama.rope.freq_base", GgufValue::F32(s.rope_base));
  w.Set("llama.rope.dimension_count", GgufValue::U32(static_cast<uint32_t>(head_dim)));

  auto pool = std::make_shared<ThreadPool>(o.threads);
  auto matrix = [&](const std::string& name, int64_t rows, int64_t cols) {
    const DType type = TensorTypeFor(ft, name, s.n_layer, s.tied_output);
    w.AddTensor(name, type, {cols, rows}, RandomMatrix(name, type, rows, cols, o.seed, pool));
  };
  auto ones = [&](const std::string& name, int64_t n) {
    w.AddTensor(name, DType::kF32, {n}, ConstantF32(std::vector<float>(static_cast<size_t>(n), 1.0f)));
  };
  matrix("token_embd.weight", n_vocab, s.n_embd);
  if (s.rope_llama3_factor > 0) {
    w.AddTensor("rope_freqs.weight", DType::kF32, {head_dim / 2}, ConstantF32(Llama3RopeFactors(s, head_dim)));
  }
  for (int32_t i = 0; i < s.n_layer; ++i) {
    const std::string b = "blk." + std::to_string(i) + ".";
    ones(b + "attn_norm.weight", s.n_embd);
    matrix(b + "attn_q.weight", s.n_embd, s.n_embd);
    matrix(b + "attn_k.weight", static_cast<int64_t>(s.n_head_kv) * head_dim, s.n_embd);
    matrix(b + "attn_v.weight", static_cast<int64_t>(s.n_head_kv) * head_dim, s.n_embd);
    matrix(b + "attn_output.weight", s.n_embd, s.n_embd);
    ones(b + "ffn_norm.weight", s.n_embd);
    matrix(b + "ffn_gate.weight", s.n_ff, s.n_embd);
    matrix(b + "ffn_up.weight", s.n_ff, s.n_embd);
    matrix(b + "ffn_down.weight", s.n_embd, s.n_ff);
  }
  ones("output_norm.weight", s.n_embd);
  if (!s.tied_output) matrix("output.weight", n_vocab, s.n_embd);
  HERD_LOG(kInfo, "writing %s (%s, %s, vocab %d)", o.output_path.c_str(), s.name.c_str(), ft.name.c_str(), n_vocab);
  return w.Write(o.output_path);
}

}  // namespace herd
