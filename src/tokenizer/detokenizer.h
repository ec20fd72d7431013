// Streaming detokenization: feed generated tokens one at a time, get text deltas that only
// ever contain whole UTF-8 characters. Bytes of a character split over several tokens (byte
// fallback tokens, byte-level BPE pieces) are held back until the character is complete;
// bytes that can never form a character are replaced by U+FFFD. The concatenated deltas
// equal Tokenizer::Decode of the same ids whenever that is valid UTF-8.
#pragma once

#include <string>

#include "tokenizer/tokenizer.h"

namespace herd {

class StreamingDetokenizer {
 public:
  // `opts.strip_leading_space`: the stream starts at the beginning of a text (drop the SPM
  // dummy-prefix space of the first piece); false when continuing after a prompt.
  explicit StreamingDetokenizer(const Tokenizer& tokenizer, DecodeOptions opts = {});

  // Adds one token; returns the text that is now complete (possibly empty).
  std::string Push(TokenId id);
  // Ends the stream: returns what is held back, incomplete characters as U+FFFD.
  std::string Finish();
  // Bytes currently held back (an incomplete character).
  size_t pending_bytes() const { return pending_.size(); }

 private:
  const Tokenizer& tokenizer_;
  DecodeOptions opts_;
  bool at_start_ = true;
  std::string pending_;
};

// Replaces every malformed byte of `s` by U+FFFD (valid sequences are kept).
std::string SanitizeUtf8(std::string_view s);

}  // namespace herd
