#include "tokenizer/unicode.h"

#include <algorithm>
#include <array>
#include <memory>

#include "tokenizer/unicode_tables.h"

namespace herd::unicode {
namespace ut = unicode_tables;

namespace {

// Hangul syllable algorithm constants (Unicode 3.12).
constexpr uint32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
constexpr uint32_t kLCount = 19, kVCount = 21, kTCount = 28, kNCount = kVCount * kTCount, kSCount = kLCount * kNCount;

// Categories of the Basic Multilingual Plane, expanded once (64 KiB) for O(1) lookups.
const uint8_t* BmpCategories() {
  static const std::unique_ptr<uint8_t[]> table = [] {
    auto t = std::make_unique<uint8_t[]>(0x10000);
    for (int i = 0; i < ut::kNumCategoryRanges; ++i) {
      const auto& r = ut::kCategoryRanges[i];
      if (r.first >= 0x10000) break;
      for (uint32_t cp = r.first; cp <= std::min<uint32_t>(r.last, 0xFFFF); ++cp) t[cp] = r.category;
    }
    return t;
  }();
  return table.get();
}

template <typename Range>
const Range* FindRange(const Range* begin, int count, uint32_t cp) {
  const Range* end = begin + count;
  const Range* it = std::upper_bound(begin, end, cp, [](uint32_t v, const Range& r) { return v < r.first; });
  if (it == begin) return nullptr;
  --it;
  return cp <= it->last ? it : nullptr;
}

}  // namespace

const char* UnicodeVersion() { return ut::kUnicodeVersion; }

Category GetCategory(uint32_t cp) {
  if (cp < 0x10000) return static_cast<Category>(BmpCategories()[cp]);
  if (cp > 0x10FFFF) return kCn;
  const auto* r = FindRange(ut::kCategoryRanges, ut::kNumCategoryRanges, cp);
  return r ? static_cast<Category>(r->category) : kCn;
}

bool IsWhitespace(uint32_t cp) {
  switch (cp) {
    case 0x09:
    case 0x0A:
    case 0x0B:
    case 0x0C:
    case 0x0D:
    case 0x20:
    case 0x85:
    case 0xA0:
    case 0x1680:
    case 0x2028:
    case 0x2029:
    case 0x202F:
    case 0x205F:
    case 0x3000: return true;
    default: return cp >= 0x2000 && cp <= 0x200A;
  }
}

uint8_t CombiningClass(uint32_t cp) {
  if (cp < 0x300) return 0;
  const auto* r = FindRange(ut::kCccRanges, ut::kNumCccRanges, cp);
  return r ? r->ccc : 0;
}

void AppendDecomposition(uint32_t cp, std::vector<uint32_t>* out) {
  if (cp >= kSBase && cp < kSBase + kSCount) {
    uint32_t s = cp - kSBase;
    out->push_back(kLBase + s / kNCount);
    out->push_back(kVBase + (s % kNCount) / kTCount);
    if (s % kTCount != 0) out->push_back(kTBase + s % kTCount);
    return;
  }
  if (cp >= 0xC0) {
    const auto* end = ut::kDecompositions + ut::kNumDecompositions;
    const auto* it =
        std::lower_bound(ut::kDecompositions, end, cp, [](const ut::Decomposition& d, uint32_t v) { return d.cp < v; });
    if (it != end && it->cp == cp) {
      out->insert(out->end(), ut::kDecompositionPool + it->offset, ut::kDecompositionPool + it->offset + it->length);
      return;
    }
  }
  out->push_back(cp);
}

std::vector<uint32_t> Nfd(const std::vector<uint32_t>& cps) {
  std::vector<uint32_t> out;
  out.reserve(cps.size());
  for (uint32_t cp : cps) AppendDecomposition(cp, &out);
  // Canonical ordering: stable sort each run of non-starters by combining class.
  for (size_t i = 0; i < out.size();) {
    if (CombiningClass(out[i]) == 0) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < out.size() && CombiningClass(out[j]) != 0) ++j;
    std::stable_sort(out.begin() + i, out.begin() + j,
                     [](uint32_t a, uint32_t b) { return CombiningClass(a) < CombiningClass(b); });
    i = j;
  }
  return out;
}

void AppendLower(uint32_t cp, std::vector<uint32_t>* out) {
  for (int i = 0; i < ut::kNumLowerMulti; ++i) {
    if (ut::kLowerMulti[i].cp == cp) {
      for (uint32_t l : ut::kLowerMulti[i].lower)
        if (l) out->push_back(l);
      return;
    }
  }
  out->push_back(ToLowerSimple(cp));
}

uint32_t ToLowerSimple(uint32_t cp) {
  if (cp < 0x80) return (cp >= 'A' && cp <= 'Z') ? cp + 32 : cp;
  for (int i = 0; i < ut::kNumLowerMulti; ++i)
    if (ut::kLowerMulti[i].cp == cp) return ut::kLowerMulti[i].lower[0];
  const auto* r = FindRange(ut::kLowerRuns, ut::kNumLowerRuns, cp);
  if (!r || (cp - r->first) % r->stride != 0) return cp;
  return static_cast<uint32_t>(static_cast<int32_t>(cp) + r->delta);
}

void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

std::string ToUtf8(uint32_t cp) {
  std::string s;
  AppendUtf8(cp, &s);
  return s;
}

std::vector<uint32_t> DecodeAll(std::string_view s) {
  std::vector<uint32_t> out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    size_t len;
    uint32_t cp = DecodeUtf8(s.data() + i, s.size() - i, &len);
    out.push_back(cp == kInvalid ? 0xFFFD : cp);
    i += len;
  }
  return out;
}

size_t CompleteUtf8Prefix(std::string_view s) {
  const auto* u = reinterpret_cast<const uint8_t*>(s.data());
  size_t n = s.size();
  // Find the start of the last (possibly partial) sequence: at most 3 continuation bytes back.
  size_t back = 0;
  while (back < 3 && back < n && (u[n - 1 - back] & 0xC0) == 0x80) ++back;
  if (back == n) return n;  // only continuation bytes: malformed, complete as is
  size_t lead_pos = n - 1 - back;
  uint8_t lead = u[lead_pos];
  size_t need = lead >= 0xF0 && lead <= 0xF4   ? 4
                : lead >= 0xE0 && lead <= 0xEF ? 3
                : lead >= 0xC2 && lead <= 0xDF ? 2
                                               : 1;
  size_t have = back + 1;
  if (need == 1 || have >= need) return n;  // ASCII, malformed lead, or a complete sequence
  // A partial sequence: hold it back only if its second byte is still allowed.
  if (have >= 2) {
    uint8_t b1 = u[lead_pos + 1];
    if ((lead == 0xE0 && b1 < 0xA0) || (lead == 0xED && b1 > 0x9F) || (lead == 0xF0 && b1 < 0x90) ||
        (lead == 0xF4 && b1 > 0x8F))
      return n;
  }
  return lead_pos;
}

}  // namespace herd::unicode
