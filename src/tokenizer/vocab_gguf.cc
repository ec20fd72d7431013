// LoadVocab: GGUF `tokenizer.ggml.*` metadata -> Vocab.
#include "io/gguf.h"
#include "tokenizer/vocab.h"

namespace herd {
namespace {

// Reads an optional token id key; absent keys leave *id unchanged.
Status ReadId(const GgufFile& f, const char* key, const Vocab& v, TokenId* id) {
  if (!f.Has(key)) return Status::Ok();
  HERD_ASSIGN_OR_RETURN(int64_t value, f.GetI64(key));
  if (value < 0 || value >= v.size())
    return OutOfRange(
        StrFormat("%s = %lld is outside the vocabulary (%d tokens)", key, static_cast<long long>(value), v.size()));
  *id = static_cast<TokenId>(value);
  return Status::Ok();
}

Status ReadFlag(const GgufFile& f, const char* key, bool* flag) {
  if (!f.Has(key)) return Status::Ok();
  HERD_ASSIGN_OR_RETURN(*flag, f.GetBool(key));
  return Status::Ok();
}

Result<Vocab> Load(const GgufFile& f) {
  Vocab v;
  HERD_ASSIGN_OR_RETURN(std::string model, f.GetString("tokenizer.ggml.model"));
  if (model == "llama") {
    v.model = TokenizerModel::kSpm;
  } else if (model == "gpt2") {
    v.model = TokenizerModel::kBpe;
  } else if (model == "bert") {
    v.model = TokenizerModel::kWordPiece;
  } else {
    return Unimplemented("tokenizer model '" + model + "' is not supported (supported: llama, gpt2, bert)");
  }
  if (f.Has("tokenizer.ggml.pre")) {
    HERD_ASSIGN_OR_RETURN(v.pre, f.GetString("tokenizer.ggml.pre"));
  }
  HERD_ASSIGN_OR_RETURN(v.tokens, f.GetStringArray("tokenizer.ggml.tokens"));
  if (f.Has("tokenizer.ggml.scores")) {
    HERD_ASSIGN_OR_RETURN(v.scores, f.GetF32Array("tokenizer.ggml.scores"));
  }
  v.types.assign(v.tokens.size(), TokenType::kNormal);
  if (f.Has("tokenizer.ggml.token_type")) {
    HERD_ASSIGN_OR_RETURN(std::vector<int32_t> types, f.GetI32Array("tokenizer.ggml.token_type"));
    if (types.size() != v.tokens.size())
      return InvalidArgument(StrFormat("tokenizer.ggml.token_type has %zu entries, tokenizer.ggml.tokens %zu",
                                       types.size(), v.tokens.size()));
    for (size_t i = 0; i < types.size(); ++i)
      v.types[i] = types[i] >= 1 && types[i] <= 6 ? static_cast<TokenType>(types[i]) : TokenType::kUndefined;
  }
  if (v.model == TokenizerModel::kBpe) {
    HERD_ASSIGN_OR_RETURN(v.merges, f.GetStringArray("tokenizer.ggml.merges"));
  }

  v.SetModelDefaults();
  HERD_RETURN_IF_ERROR(ReadId(f, "tokenizer.ggml.bos_token_id", v, &v.bos));
  HERD_RETURN_IF_ERROR(ReadId(f, "tokenizer.ggml.eos_token_id", v, &v.eos));
  HERD_RETURN_IF_ERROR(ReadId(f, "tokenizer.ggml.eot_token_id", v, &v.eot));
  HERD_RETURN_IF_ERROR(ReadId(f, "tokenizer.ggml.eom_token_id", v, &v.eom));
  HERD_RETURN_IF_ERROR(ReadId(f, "tokenizer.ggml.unknown_token_id", v, &v.unk));
  HERD_RETURN_IF_ERROR(ReadId(f, "tokenizer.ggml.seperator_token_id", v, &v.sep));  // sic, as in GGUF
  HERD_RETURN_IF_ERROR(ReadId(f, "tokenizer.ggml.padding_token_id", v, &v.pad));
  HERD_RETURN_IF_ERROR(ReadId(f, "tokenizer.ggml.mask_token_id", v, &v.mask));
  HERD_RETURN_IF_ERROR(ReadId(f, "tokenizer.ggml.fim_pre_token_id", v, &v.fim_pre));
  HERD_RETURN_IF_ERROR(ReadId(f, "tokenizer.ggml.fim_suf_token_id", v, &v.fim_suf));
  HERD_RETURN_IF_ERROR(ReadId(f, "tokenizer.ggml.fim_mid_token_id", v, &v.fim_mid));
  if (v.bos == kNoToken) HERD_RETURN_IF_ERROR(ReadId(f, "tokenizer.ggml.cls_token_id", v, &v.bos));  // BERT [CLS]
  HERD_RETURN_IF_ERROR(ReadFlag(f, "tokenizer.ggml.add_bos_token", &v.add_bos));
  HERD_RETURN_IF_ERROR(ReadFlag(f, "tokenizer.ggml.add_eos_token", &v.add_eos));
  HERD_RETURN_IF_ERROR(ReadFlag(f, "tokenizer.ggml.add_sep_token", &v.add_sep));
  HERD_RETURN_IF_ERROR(ReadFlag(f, "tokenizer.ggml.add_space_prefix", &v.add_space_prefix));
  // A flag without its token cannot be honoured; drop it rather than fail the whole model.
  if (v.bos == kNoToken) v.add_bos = false;
  if (v.eos == kNoToken) v.add_eos = false;
  if (v.sep == kNoToken) v.add_sep = false;
  v.CollectEog();
  HERD_RETURN_IF_ERROR(v.Validate());
  return v;
}

}  // namespace

Result<Vocab> LoadVocab(const GgufFile& file) {
  Result<Vocab> v = Load(file);
  if (!v.ok()) return v.status().WithContext(file.path() + ": tokenizer");
  return v;
}

}  // namespace herd
