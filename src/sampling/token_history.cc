#include "sampling/token_history.h"

#include "base/check.h"

namespace herd {

TokenHistory::TokenHistory(int last_n) : last_n_(last_n) { HERD_CHECK_GE(last_n, -1); }

void TokenHistory::Push(int32_t id) {
  if (last_n_ == 0) return;
  ++counts_[id];
  if (last_n_ < 0) {
    ++size_;
    return;
  }
  window_.push_back(id);
  if (window_.size() > static_cast<size_t>(last_n_)) {
    auto it = counts_.find(window_.front());
    HERD_DCHECK(it != counts_.end());
    if (--it->second == 0) counts_.erase(it);
    window_.pop_front();
  }
  size_ = window_.size();
}

int TokenHistory::Count(int32_t id) const {
  auto it = counts_.find(id);
  return it == counts_.end() ? 0 : it->second;
}

}  // namespace herd
