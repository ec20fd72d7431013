// ForwardBatch::OneTokenPerSequence: what the model promises the attention backends with
// AttentionBatch::may_have_runs = false (a device backend then fuses the step's K/V store into
// its decode kernel, which is only correct when no sequence has a second token in the batch).
#include <gtest/gtest.h>

#include "model/model.h"

namespace herd {
namespace {

ForwardBatch BatchOf(std::vector<int32_t> seq, std::vector<int32_t> pos) {
  ForwardBatch b;
  b.tokens.assign(seq.size(), 1);
  b.seq = std::move(seq);
  b.pos = std::move(pos);
  return b;
}

TEST(ForwardBatchTest, DecodeStepsHaveOneTokenPerSequence) {
  EXPECT_TRUE(BatchOf({0}, {7}).OneTokenPerSequence());
  EXPECT_TRUE(BatchOf({3, 0, 2, 1}, {9, 40, 5, 5}).OneTokenPerSequence());  // any order
}

TEST(ForwardBatchTest, AnySequenceTwiceIsNot) {
  EXPECT_FALSE(BatchOf({0, 0, 0}, {4, 5, 6}).OneTokenPerSequence());        // a prefill run
  EXPECT_FALSE(BatchOf({1, 0, 0}, {9, 4, 5}).OneTokenPerSequence());        // a chunk after a decode
  EXPECT_FALSE(BatchOf({2, 0, 1, 0}, {3, 4, 8, 5}).OneTokenPerSequence());  // apart in the batch
  EXPECT_FALSE(BatchOf({2, 0, 1, 2}, {3, 4, 8, 9}).OneTokenPerSequence());  // first and last
  EXPECT_FALSE(BatchOf({5, 5}, {3, 9}).OneTokenPerSequence());              // not consecutive positions
}

}  // namespace
}  // namespace herd
