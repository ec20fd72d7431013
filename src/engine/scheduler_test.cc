#include "engine/scheduler.h"

#include <gtest/gtest.h>

#include <memory>
#include <numeric>

namespace herd {
namespace {

struct Harness {
  explicit Harness(int32_t n_blocks, SchedulerConfig c = {}) : kv(Opts(n_blocks)), sched(c, &kv) {}
  static KvCacheManagerOptions Opts(int32_t n_blocks) {
    KvCacheManagerOptions o;
    o.n_blocks = n_blocks;
    o.block_size = 4;
    o.cache_key = "sched-test";
    return o;
  }
  Sequence* Add(int n_prompt, int priority = 0, int first_token = 0) {
    auto s = std::make_unique<Sequence>();
    s->id = static_cast<SeqId>(seqs.size() + 1);
    s->arrival = seqs.size();
    s->priority = priority;
    s->tokens.resize(static_cast<size_t>(n_prompt));
    std::iota(s->tokens.begin(), s->tokens.end(), first_token);
    s->n_prompt = n_prompt;
    seqs.push_back(std::move(s));
    sched.AddWaiting(seqs.back().get());
    return seqs.back().get();
  }
  // What the engine does after a forward pass: advance, commit, and append a token to
  // sequences that reached the end of their tokens.
  void Finish(const SchedulerStep& step) {
    for (const auto& c : step.chunks) {
      c.seq->n_computed += c.n_tokens;
      kv.Commit(c.seq->id, c.seq->tokens, c.seq->n_computed);
      if (c.seq->n_computed == static_cast<int32_t>(c.seq->tokens.size())) c.seq->tokens.push_back(7);
    }
    kv.TakeCopies();
  }
  KvCacheManager kv;
  Scheduler sched;
  std::vector<std::unique_ptr<Sequence>> seqs;
};

std::vector<std::pair<SeqId, int32_t>> Plan(const SchedulerStep& s) {
  std::vector<std::pair<SeqId, int32_t>> out;
  for (const auto& c : s.chunks) out.emplace_back(c.seq->id, c.n_tokens);
  return out;
}

using P = std::vector<std::pair<SeqId, int32_t>>;

TEST(SchedulerTest, ChunkedPrefillSharesTheBudgetWithDecodeTokens) {
  SchedulerConfig c;
  c.max_batch_tokens = 10;
  c.watermark = 0;
  Harness h(64, c);
  h.Add(3);
  h.Add(25);
  auto s1 = h.sched.Schedule();
  EXPECT_EQ(Plan(s1), (P{{1, 3}, {2, 7}}));
  h.Finish(s1);
  auto s2 = h.sched.Schedule();  // 1 decodes one token, 2 gets the other 9
  EXPECT_EQ(Plan(s2), (P{{1, 1}, {2, 9}}));
  h.Finish(s2);
  auto s3 = h.sched.Schedule();
  EXPECT_EQ(Plan(s3), (P{{1, 1}, {2, 9}}));
  h.Finish(s3);
  EXPECT_EQ(Plan(h.sched.Schedule()), (P{{1, 1}, {2, 1}}));  // 2's prompt done: both decode
}

TEST(SchedulerTest, AdmissionStopsAtTheQueueHeadWhenBlocksRunOut) {
  SchedulerConfig c;
  c.watermark = 0;
  Harness h(4, c);   // 16 token slots
  h.Add(10);         // 3 blocks
  h.Add(8, 0, 100);  // 2 blocks: does not fit now
  h.Add(2, 0, 200);  // would fit, but may not overtake the head
  auto s = h.sched.Schedule();
  EXPECT_EQ(Plan(s), (P{{1, 10}}));
  EXPECT_EQ(h.sched.waiting().size(), 2u);
}

TEST(SchedulerTest, PreemptsTheLowestPriorityLatestSequenceAndRecomputesItLater) {
  SchedulerConfig c;
  c.watermark = 0;
  Harness h(4, c);
  Sequence* a = h.Add(4, /*priority=*/1);
  Sequence* b = h.Add(4, 0, 100);
  Sequence* d = h.Add(4, 0, 200);
  auto s1 = h.sched.Schedule();  // a (prio 1) first, then b, d in arrival order
  EXPECT_EQ(Plan(s1), (P{{a->id, 4}, {b->id, 4}, {d->id, 4}}));
  h.Finish(s1);  // each now has 5 tokens: the 5th needs a new block; one is free
  auto s2 = h.sched.Schedule();
  ASSERT_EQ(s2.preempted.size(), 1u);
  EXPECT_EQ(s2.preempted[0], d);  // lowest priority, latest arrival
  EXPECT_EQ(Plan(s2), (P{{a->id, 1}, {b->id, 1}}));
  EXPECT_EQ(d->n_computed, 0);
  EXPECT_EQ(d->n_preempted, 1);
  EXPECT_EQ(h.sched.waiting().front(), d);
  h.Finish(s2);
  h.sched.Remove(b);
  // d comes back and recomputes all 5 tokens: b's retry took the block d released (the only
  // free one), evicting d's cached first block.
  auto s3 = h.sched.Schedule();
  EXPECT_EQ(Plan(s3), (P{{a->id, 1}, {d->id, 5}}));
  EXPECT_EQ(h.kv.stats().evictions, 2);  // d's block for b, then b's first block for d
}

TEST(SchedulerTest, RunningSlotsAreBounded) {
  SchedulerConfig c;
  c.max_running = 2;
  Harness h(64, c);
  h.Add(2);
  h.Add(2, 0, 10);
  h.Add(2, 0, 20);
  EXPECT_EQ(h.sched.Schedule().chunks.size(), 2u);
  EXPECT_EQ(h.sched.waiting().size(), 1u);
}

}  // namespace
}  // namespace herd
