#include "cli/bench_serve/prompt_text.h"

#include <cmath>
#include <cstdlib>
#include <set>
#include <sstream>

namespace herd::bench {

const std::vector<std::string>& CommonWords() {
  static const std::vector<std::string> words = [] {
    const char* text =
        "time year people way day man thing woman life child world school state family student group country "
        "problem hand part place case week company system program question work government number night point "
        "home water room mother area money story fact month lot right study book eye job word business issue "
        "side kind head house service friend father power hour game line end member law car city community name "
        "president team minute idea kid body information back parent face others level office door health "
        "person art war history party result change morning reason research girl guy moment air teacher force "
        "education foot boy age policy process music market sense nation plan college interest death experience "
        "effect use class control care field development role effort rate heart drug show leader light voice "
        "wife police mind price report decision son view relationship town road arm difference value building "
        "action model season society tax director position player record paper space ground form event official "
        "matter center couple site project activity star table need court oil situation cost industry figure "
        "street image phone data picture practice piece land product doctor wall patient worker news test movie "
        "north love support technology step baby computer type attention film tree source organization hair "
        "window evidence population site river garden bridge stone winter summer spring autumn morning evening "
        "quick slow bright dark warm cold early late simple clear strong gentle careful happy quiet busy open "
        "small large green blue red yellow white black golden silver ancient modern local distant central "
        "run walk read write build carry bring follow learn change move play live believe hold happen provide "
        "sit stand lose pay meet include continue set lead understand watch speak allow add spend grow offer "
        "remember love consider appear buy wait serve die send expect stay fall cut reach kill remain suggest "
        "raise pass sell require report decide pull return explain hope develop drive break receive agree "
        "support hit produce eat cover catch draw choose cause point listen realize place close involve thank "
        "and the of to in for on with at by from about into over after under between through during without "
        "before again often always never sometimes usually together however therefore because although while";
    std::vector<std::string> out;
    std::istringstream in(text);
    std::string w;
    std::set<std::string> seen;
    while (in >> w) {
      if (seen.insert(w).second) out.push_back(w);
    }
    return out;
  }();
  return words;
}

int TokenCounter::Count(const std::string& text, bool* was_exact) const {
  if (exact) {
    if (std::optional<int> n = exact(text)) {
      if (was_exact) *was_exact = true;
      return *n;
    }
  }
  if (was_exact) *was_exact = false;
  int words = 0;
  bool in_word = false;
  for (char c : text) {
    const bool space = c == ' ' || c == '\n' || c == '\t';
    if (!space && !in_word) ++words;
    in_word = !space;
  }
  return static_cast<int>(std::lround(words * tokens_per_word));
}

std::string PromptText::Words(int n) {
  const auto& words = CommonWords();
  std::uniform_int_distribution<size_t> pick(0, words.size() - 1);
  std::string out;
  for (int i = 0; i < n; ++i) {
    if (i > 0) out += ' ';
    out += words[pick(rng_)];
  }
  return out;
}

FittedText PromptText::Fit(const std::string& prefix, int tokens) {
  const auto& words = CommonWords();
  std::uniform_int_distribution<size_t> pick(0, words.size() - 1);
  const double tpw = counter_->tokens_per_word > 0 ? counter_->tokens_per_word : 1.3;
  const int prefix_tokens = prefix.empty() ? 0 : counter_->Count(prefix);
  int k = std::max(0, static_cast<int>(std::lround((tokens - prefix_tokens) / tpw)));
  std::vector<const std::string*> pool;
  auto make = [&](int n) {
    while (static_cast<int>(pool.size()) < n) pool.push_back(&words[pick(rng_)]);
    std::string s = prefix;
    for (int i = 0; i < n; ++i) {
      if (!s.empty()) s += ' ';
      s += *pool[i];
    }
    return s;
  };
  FittedText best;
  best.text = make(k);
  best.tokens = counter_->Count(best.text, &best.exact);
  if (!best.exact || tokens <= prefix_tokens) return best;
  std::set<int> tried = {k};
  int count = best.tokens;
  for (int iter = 0; iter < 10 && count != tokens; ++iter) {
    int step = static_cast<int>(std::lround((tokens - count) / tpw));
    if (step == 0) step = tokens > count ? 1 : -1;
    int next = std::max(0, k + step);
    if (tried.count(next) != 0) next = k + (tokens > count ? 1 : -1);  // oscillating: one word at a time
    if (next < 0 || !tried.insert(next).second) break;
    k = next;
    FittedText t;
    t.text = make(k);
    t.tokens = counter_->Count(t.text, &t.exact);
    if (!t.exact) break;
    count = t.tokens;
    const int d = std::abs(t.tokens - tokens), bd = std::abs(best.tokens - tokens);
    if (d < bd || (d == bd && t.tokens < best.tokens)) best = std::move(t);
  }
  return best;
}

}  // namespace herd::bench
