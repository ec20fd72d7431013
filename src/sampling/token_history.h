// The penalty window of one sequence: the last `last_n` accepted tokens (every accepted token
// when last_n == -1, none when last_n == 0) and how often each occurs in it.
// Cost: Push is O(1) expected; memory is O(window) (whole-history windows keep only counts).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <unordered_map>

namespace herd {

class TokenHistory {
 public:
  explicit TokenHistory(int last_n);

  // Appends a token; the oldest one leaves a full bounded window.
  void Push(int32_t id);

  // Occurrences of `id` in the window (0 if absent).
  int Count(int32_t id) const;
  // Distinct tokens in the window -> occurrences (> 0). Iteration order is unspecified.
  const std::unordered_map<int32_t, int>& counts() const { return counts_; }
  // Tokens in the window (with repetitions).
  size_t size() const { return size_; }
  int last_n() const { return last_n_; }

 private:
  int last_n_;
  size_t size_ = 0;
  std::deque<int32_t> window_;  // used only when last_n_ > 0
  std::unordered_map<int32_t, int> counts_;
};

}  // namespace herd
