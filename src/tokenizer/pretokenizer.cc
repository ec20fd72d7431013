#include "tokenizer/pretokenizer.h"

#include "tokenizer/unicode.h"

namespace herd {
namespace {

// The published patterns (from each model's tokenizer.json, as collected by llama.cpp).
constexpr const char* kGpt2 = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
constexpr const char* kLlama3 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kQwen2 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kDeepseekLetters =
    R"(\s?[A-Za-zµÀ-ÖØ-öø-ƺƼ-ƿǄ-ʓʕ-ʯͰ-ͳͶͷͻ-ͽͿΆΈ-ΊΌΎ-ΡΣ-ϵϷ-ҁҊ-ԯԱ-ՖႠ-ჅᎠ-Ᏽᏸ-ᏽᲐ-ᲺᲽ-Ჿᴀ-ᴫᵫ-ᵷᵹ-ᶚḀ-ἕἘ-Ἕἠ-ὅὈ-Ὅὐ-ὗὙὛὝὟ-\x{1F7D}ᾀ-ᾴᾶ-ᾼ\x{1FBE}ῂ-ῄῆ-ῌῐ-\x{1FD3}ῖ-\x{1FDB}ῠ-Ῥῲ-ῴῶ-ῼℂℇℊ-ℓℕℙ-ℝℤ\x{2126}ℨ\x{212A}-ℭℯ-ℴℹℼ-ℿⅅ-ⅉⅎↃↄⰀ-ⱻⱾ-ⳤⳫ-ⳮⳲⳳꙀ-ꙭꚀ-ꚛꜢ-ꝯꝱ-ꞇꞋ-ꞎꭰ-ꮿﬀ-ﬆﬓ-ﬗＡ-Ｚａ-ｚ𐐀-𐑏𐒰-𐓓𐓘-𐓻𐲀-𐲲𐳀-𐳲𑢠-𑣟𞤀-𞥃]+)";
constexpr const char* kCjk = R"([一-龥ࠀ-一가-퟿]+)";
constexpr const char* kMixedCase = R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+)";
constexpr const char* kUpperCase = R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*)";
constexpr const char* kContractionsCi = R"((?i:'s|'t|'re|'ve|'m|'ll|'d))";

struct Family {
  std::vector<std::string> names;
  std::vector<std::string> patterns;
};

const std::vector<Family>& Families() {
  static const std::vector<Family> families = [] {
    std::string gpt4o = std::string(kMixedCase) + kContractionsCi + "?|" + kUpperCase + kContractionsCi +
                        R"(?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
    std::string tekken =
        std::string(kMixedCase) + "|" + kUpperCase + R"(|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
    std::string deepseek3 =
        R"([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
    return std::vector<Family>{
        {{"default"}, {R"([\p{P}\$\+<=>\^~\|]+)", kGpt2, R"(\p{N}+)", R"([0-9][0-9][0-9])"}},
        {{"gpt-2",      "gpt2",       "phi-2",        "jina-es",     "jina-de",         "gigachat", "jina-v1-en",
          "jina-v2-es", "jina-v2-de", "jina-v2-code", "roberta-bpe", "a.x-4.0",         "mellum",   "exaone4",
          "mpt",        "olmo",       "jais",         "trillion",    "granite-docling", "gpt-neox"},
         {kGpt2}},
        {{"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2", "dbrx", "smaug-bpe",
          "chatglm-bpe", "glm4"},
         {kLlama3}},
        {{"qwen2", "deepseek-r1-qwen", "kormo", "megrez", "stablelm2", "hunyuan", "grok-2"}, {kQwen2}},
        {{"deepseek-llm"},
         {R"([\r\n])", kDeepseekLetters, R"(\s?[!-/:-~！-／：-～‘-‟　-。]+)", R"(\s+$)", kCjk, R"(\p{N}+)"}},
        {{"deepseek-coder"}, {R"([\r\n])", R"(\s?\p{L}+)", R"(\s?\p{P}+)", kCjk, R"(\p{N})"}},
        {{"deepseek-v3", "hunyuan-dense"}, {R"(\p{N}{1,3})", R"([一-龥぀-ゟ゠-ヿ]+)", deepseek3}},
        {{"falcon"}, {R"([\p{P}\$\+<=>\^~\|`]+)", kGpt2, R"([0-9][0-9][0-9])"}},
        {{"starcoder", "refact", "command-r", "smollm", "codeshell", "exaone", "minerva-7b"}, {R"(\p{N})", kGpt2}},
        {{"poro-chat", "bloom", "gpt3-finnish"}, {R"( ?[^(\s|.,!?…。，、।۔،)]+)"}},
        {{"viking"}, {R"( ?[^(\s|.,!?…。，、।۔،)]+)", R"(\p{N})"}},
        {{"tekken"}, {tekken}},
        {{"gpt-4o", "llama4", "minimax-m2"}, {gpt4o}},
        {{"chameleon"},
         {"<sentinel:[0-9]+>", "(IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z", R"(([\t\n]|    |  ))", R"(\p{N})",
          R"([\p{P}!-/:-@\[-`{-~])", kGpt2}},
        {{"superbpe"}, {R"(\p{N}+)", R"((?=(\d{3})+(?!\d)))"}},
        {{"bailingmoe", "bailingmoe2", "llada-moe"},
         {R"('(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+)"}},
        {{"seed-coder"},
         {R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1}| ?[^\s\p{L}\p{N}\r\n]+|\s*[\r\n]+|\s+(?!\S)|\s+)"}},
    };
  }();
  return families;
}

PreTokenizer::Scanner ScannerFor(const std::string& pattern) {
  if (pattern == kGpt2) return PreTokenizer::Scanner::kGpt2;
  if (pattern == kLlama3) return PreTokenizer::Scanner::kLlama3;
  if (pattern == kQwen2) return PreTokenizer::Scanner::kQwen2;
  return PreTokenizer::Scanner::kNone;
}

}  // namespace

Result<PreTokenizer> PreTokenizer::FromPatterns(const std::vector<std::string>& patterns, bool use_scanners) {
  PreTokenizer pt;
  pt.patterns_ = patterns;
  for (const std::string& p : patterns) {
    Step step;
    step.scanner = use_scanners ? ScannerFor(p) : Scanner::kNone;
    if (step.scanner == Scanner::kNone) {
      HERD_ASSIGN_OR_RETURN(Regex re, Regex::Compile(p));
      step.regex = std::make_shared<const Regex>(std::move(re));
    }
    pt.steps_.push_back(std::move(step));
  }
  return pt;
}

Result<PreTokenizer> PreTokenizer::ForName(std::string_view name) {
  for (const Family& f : Families()) {
    for (const std::string& n : f.names) {
      if (n == name) {
        HERD_ASSIGN_OR_RETURN(PreTokenizer pt, FromPatterns(f.patterns));
        pt.name_ = std::string(name);
        return pt;
      }
    }
  }
  return Unimplemented(StrFormat("unknown pre-tokenizer '%.*s'", static_cast<int>(name.size()), name.data()));
}

long PreTokenizer::MatchStep(const Step& step, const uint32_t* cps, size_t n, size_t pos) {
  switch (step.scanner) {
    case Scanner::kGpt2: return static_cast<long>(ScanGpt2(cps, n, pos));
    case Scanner::kLlama3: return static_cast<long>(ScanLlama3(cps, n, pos, 3));
    case Scanner::kQwen2: return static_cast<long>(ScanLlama3(cps, n, pos, 1));
    case Scanner::kNone: break;
  }
  return step.regex->MatchAt(cps, n, pos);
}

void PreTokenizer::Split(std::string_view text, std::vector<std::pair<uint32_t, uint32_t>>* pieces) const {
  if (text.empty()) return;
  // Code points and the byte offset of each (plus the end). Malformed bytes become
  // 0x110000 + byte: unassigned characters that keep their byte.
  std::vector<uint32_t> cps;
  std::vector<uint32_t> offs;
  cps.reserve(text.size());
  offs.reserve(text.size() + 1);
  for (size_t i = 0; i < text.size();) {
    size_t len;
    uint32_t cp = unicode::DecodeUtf8(text.data() + i, text.size() - i, &len);
    if (cp == unicode::kInvalid) cp = 0x110000u + static_cast<uint8_t>(text[i]);
    cps.push_back(cp);
    offs.push_back(static_cast<uint32_t>(i));
    i += len;
  }
  offs.push_back(static_cast<uint32_t>(text.size()));

  // Segments in code point indices, refined by each step.
  std::vector<std::pair<uint32_t, uint32_t>> segs{{0, static_cast<uint32_t>(cps.size())}}, next;
  for (const Step& step : steps_) {
    next.clear();
    for (auto [sb, se] : segs) {
      const uint32_t* base = cps.data() + sb;
      size_t n = se - sb;
      size_t gap = 0;  // start of the unmatched text before the next match
      for (size_t pos = 0; pos < n;) {
        long end = MatchStep(step, base, n, pos);
        if (end <= static_cast<long>(pos)) {
          if (end == static_cast<long>(pos) && gap < pos) {  // an empty match splits here
            next.emplace_back(sb + gap, sb + pos);
            gap = pos;
          }
          ++pos;
          continue;
        }
        if (gap < pos) next.emplace_back(sb + gap, sb + pos);
        next.emplace_back(sb + pos, sb + end);
        pos = gap = static_cast<size_t>(end);
      }
      if (gap < n) next.emplace_back(sb + gap, se);
    }
    segs.swap(next);
  }
  for (auto [b, e] : segs) pieces->emplace_back(offs[b], offs[e]);
}

std::vector<std::string> PreTokenizer::SplitToStrings(std::string_view text) const {
  std::vector<std::pair<uint32_t, uint32_t>> ranges;
  Split(text, &ranges);
  std::vector<std::string> out;
  for (auto [b, e] : ranges) out.emplace_back(text.substr(b, e - b));
  return out;
}

}  // namespace herd
