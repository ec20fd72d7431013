#include "model/config.h"

#include "io/gguf.h"

namespace herd {

std::string ModelConfig::Describe() const {
  return StrFormat("%s: %d layers, n_embd %d, heads %d/%d (head_dim %d), n_ff %d, vocab %d, ctx %d", arch.c_str(),
                   n_layer, n_embd, n_head, n_head_kv, head_dim, n_ff, n_vocab, n_ctx_train);
}

Result<ModelConfig> ReadLlamaLikeConfig(const GgufFile& f, const std::string& arch) {
  ModelConfig c;
  c.arch = arch;
  if (auto name = f.GetString("general.name"); name.ok()) c.name = *name;
  const std::string p = arch + ".";
  auto req = [&](const char* key, int32_t* out) -> Status {
    auto v = f.GetU32(p + key);
    if (!v.ok()) return v.status().WithContext(f.path());
    if (*v == 0 || *v > (1u << 30)) return InvalidArgument(StrFormat("%s: %s%s = %u is out of range", f.path().c_str(), p.c_str(), key, *v));
    *out = static_cast<int32_t>(*v);
    return Status::Ok();
  };
  HERD_RETURN_IF_ERROR(req("embedding_length", &c.n_embd));
  HERD_RETURN_IF_ERROR(req("block_count", &c.n_layer));
  HERD_RETURN_IF_ERROR(req("attention.head_count", &c.n_head));
  HERD_RETURN_IF_ERROR(req("feed_forward_length", &c.n_ff));
  HERD_ASSIGN_OR_RETURN(uint32_t ctx, f.GetU32Or(p + "context_length", 4096));
  c.n_ctx_train = static_cast<int32_t>(ctx);
  HERD_ASSIGN_OR_RETURN(uint32_t kv, f.GetU32Or(p + "attention.head_count_kv", static_cast<uint32_t>(c.n_head)));
  c.n_head_kv = static_cast<int32_t>(kv);
  if (c.n_embd % c.n_head != 0 && !f.Has(p + "attention.key_length")) {
    return InvalidArgument(StrFormat("%s: embedding_length %d is not divisible by head_count %d", f.path().c_str(),
                                     c.n_embd, c.n_head));
  }
  HERD_ASSIGN_OR_RETURN(uint32_t hd, f.GetU32Or(p + "attention.key_length", static_cast<uint32_t>(c.n_embd / c.n_head)));
  c.head_dim = static_cast<int32_t>(hd);
  if (c.n_head_kv <= 0 || c.n_head % c.n_head_kv != 0) {
    return InvalidArgument(StrFormat("%s: head_count %d is not a multiple of head_count_kv %d", f.path().c_str(),
                                     c.n_head, c.n_head_kv));
  }
  HERD_ASSIGN_OR_RETURN(c.rms_eps, f.GetF32Or(p + "attention.layer_norm_rms_epsilon", 1e-5f));
  HERD_ASSIGN_OR_RETURN(c.rope_freq_base, f.GetF32Or(p + "rope.freq_base", 10000.f));
  HERD_ASSIGN_OR_RETURN(uint32_t n_rot, f.GetU32Or(p + "rope.dimension_count", static_cast<uint32_t>(c.head_dim)));
  c.n_rot = static_cast<int32_t>(n_rot);
  if (c.n_rot <= 0 || c.n_rot > c.head_dim || c.n_rot % 2 != 0) {
    return InvalidArgument(StrFormat("%s: rope.dimension_count %d is invalid for head_dim %d", f.path().c_str(),
                                     c.n_rot, c.head_dim));
  }
  // Linear RoPE scaling: `rope.scaling.type` = "linear" with `rope.scaling.factor`, or the
  // older `rope.scale_linear`. The llama3 scheme arrives as the rope_freqs tensor instead.
  float factor = 1.f;
  if (auto type = f.GetString(p + "rope.scaling.type"); type.ok()) {
    if (*type == "linear") {
      HERD_ASSIGN_OR_RETURN(factor, f.GetF32Or(p + "rope.scaling.factor", 1.f));
    } else if (*type != "none" && *type != "llama3") {
      return Unimplemented(StrFormat("%s: rope scaling type '%s' is not supported", f.path().c_str(), type->c_str()));
    }
  } else {
    HERD_ASSIGN_OR_RETURN(factor, f.GetF32Or(p + "rope.scale_linear", 1.f));
  }
  if (!(factor > 0)) return InvalidArgument(StrFormat("%s: rope scaling factor %g must be positive", f.path().c_str(), factor));
  c.rope_freq_scale = 1.f / factor;
  return c;
}

}  // namespace herd
