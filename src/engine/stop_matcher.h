// Stop strings matched on streamed text. Text that might be the start of a stop string is held
// back until the next piece decides it, so a stop string never reaches the client, even when
// it spans several tokens. Cost per Push: O(held + piece) per stop string.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace herd {

class StopMatcher {
 public:
  explicit StopMatcher(std::vector<std::string> stops);

  // Appends `piece`; returns the text that is now final. Once a stop string is found, the
  // returned text is what precedes it and matched() is true; later pieces are ignored.
  std::string Push(std::string_view piece);
  // The generation ended for another reason: returns the held-back text.
  std::string Flush();

  bool matched() const { return matched_ >= 0; }
  const std::string& matched_string() const;
  size_t held_bytes() const { return held_.size(); }

 private:
  std::vector<std::string> stops_;
  std::string held_;
  int matched_ = -1;
};

}  // namespace herd
