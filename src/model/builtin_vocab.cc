// herd's built-in demo vocabulary: a SentencePiece-BPE ("llama" model) vocabulary with the
// three control tokens, 256 byte-fallback tokens and pieces of common English words, so the
// demo model can print word-like text without any file from elsewhere.
#include <cstdio>
#include <set>
#include <string>
#include <vector>

#include "io/gguf.h"
#include "model/make_model.h"

namespace herd {
namespace {

constexpr const char* kWords[] = {
    "the", "of", "and", "to", "in", "is", "that", "for", "it", "as", "was", "with", "be", "by", "on", "not", "he",
    "this", "are", "or", "his", "from", "at", "which", "but", "have", "an", "had", "they", "you", "were", "their",
    "one", "all", "we", "can", "her", "has", "there", "been", "if", "more", "when", "will", "would", "who", "so",
    "no", "model", "token", "server", "herd", "fast", "memory", "cache", "request", "agent", "prompt", "stream",
    "time", "people", "world", "year", "way", "day", "thing", "new", "good", "first", "last", "long", "great",
    "little", "own", "other", "old", "right", "big", "high", "different", "small", "large", "next", "early",
    "young", "important", "few", "public", "bad", "same", "able", "hello", "random", "weights", "text", "llama"};

}  // namespace

int32_t WriteBuiltinVocab(GgufWriter& writer) {
  std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
  std::vector<int32_t> types = {2, 3, 3};  // UNKNOWN, CONTROL, CONTROL
  for (int b = 0; b < 256; ++b) {
    char buf[8];
    std::snprintf(buf, sizeof(buf), "<0x%02X>", b);
    tokens.push_back(buf);
    types.push_back(6);  // BYTE
  }
  std::set<std::string> seen(tokens.begin(), tokens.end());
  auto add = [&](const std::string& piece) {
    if (seen.insert(piece).second) {
      tokens.push_back(piece);
      types.push_back(1);  // NORMAL
    }
  };
  const std::string space = "\xe2\x96\x81";  // U+2581, SentencePiece's space
  add(space);
  for (const char* p = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.,;:!?'\"()-"; *p; ++p) {
    add(std::string(1, *p));
    add(space + std::string(1, *p));
  }
  for (const char* w : kWords) {
    const std::string word = space + w;
    for (size_t n = space.size() + 1; n <= word.size(); ++n) add(word.substr(0, n));
  }
  std::vector<float> scores(tokens.size());
  for (size_t i = 0; i < tokens.size(); ++i) {
    // Longer pieces score higher so merges prefer whole words; byte/control tokens score 0.
    scores[i] = types[i] == 1 ? -static_cast<float>(tokens.size() - i) / 1000.0f + static_cast<float>(tokens[i].size())
                              : 0.0f;
  }
  writer.Set("tokenizer.ggml.model", GgufValue::Str("llama"));
  writer.Set("tokenizer.ggml.tokens", GgufValue::StrArray(tokens));
  writer.Set("tokenizer.ggml.scores", GgufValue::F32Array(scores));
  writer.Set("tokenizer.ggml.token_type", GgufValue::I32Array(types));
  writer.Set("tokenizer.ggml.unknown_token_id", GgufValue::U32(0));
  writer.Set("tokenizer.ggml.bos_token_id", GgufValue::U32(1));
  writer.Set("tokenizer.ggml.eos_token_id", GgufValue::U32(2));
  writer.Set("tokenizer.ggml.add_bos_token", GgufValue::Bool(true));
  writer.Set("tokenizer.ggml.add_eos_token", GgufValue::Bool(false));
  return static_cast<int32_t>(tokens.size());
}

}  // namespace herd
