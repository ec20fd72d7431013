// PlanAddNormRing (gemv_add_norm_plan.h): the ring shapes of the model launches, the fallbacks
// where a wanted shape does not fit, and the invariants the kernel relies on. Host only.
#include "kernels/cuda/gemv_add_norm_plan.h"

#include <gtest/gtest.h>

namespace herd::cuda::internal {
namespace {

AddNormShape Shape(int n_steps, int64_t row_bytes, int total_rows, int warps = 16, int stages = 4, int items = 2) {
  AddNormShape s;
  s.n_steps = n_steps, s.row_bytes = row_bytes, s.total_rows = total_rows, s.sms = 132;
  s.warps = warps, s.stages = stages, s.items = items;
  return s;
}

TEST(AddNormPlanTest, OneBillionGateUpTakesTheWholeShareInFourStages) {
  // 2048 -> 2 x 8192 Q4_K (1,152-byte rows): the 151 KB ring session 28's ncu reported.
  AddNormPlan p;
  ASSERT_TRUE(PlanAddNormRing(Shape(1, 1152, 16384), &p));
  EXPECT_EQ(p.consumers, 16);
  EXPECT_EQ(p.rows, 32);
  EXPECT_EQ(p.items, 2);
  EXPECT_EQ(p.stage_bytes, 36992);  // 32 x 1152 + 16, rounded up to 128
  EXPECT_EQ(p.stages, 4);
  EXPECT_EQ(p.grid, 132);
  EXPECT_EQ(p.partial_bytes, 512);  // (125 + 1) rows x 4 bytes, rounded up to 16
  EXPECT_EQ(p.smem, 4 * 36992 + 512 + 2048 + 256 + 256);
  EXPECT_GE(int64_t{p.stages} * p.rows * p.grid, 16384);  // the whole launch fits the rings
}

TEST(AddNormPlanTest, OneBillionGateUpDefaultRingOfThreeByThree) {
  // The gate/up default since session 30 (3 stages x 3 items): 48-row stages, the CTA's whole
  // share (125 rows) in the ring.
  AddNormPlan p;
  ASSERT_TRUE(PlanAddNormRing(Shape(1, 1152, 16384, 16, 3, 3), &p));
  EXPECT_EQ(p.rows, 48);
  EXPECT_EQ(p.items, 3);
  EXPECT_EQ(p.stage_bytes, 55424);  // 48 x 1152 + 16, rounded up to 128
  EXPECT_EQ(p.stages, 3);
  EXPECT_EQ(p.smem, 3 * 55424 + 512 + 2048 + 256 + 256);
  EXPECT_GE(int64_t{p.stages} * p.rows * p.grid, 16384);
}

TEST(AddNormPlanTest, StagesDropBeforeItems) {
  // 8B gate/up Q6_K rows (4096 values: 3,360 bytes), 2 steps: 16 rows x 3 stages fit 200 KB.
  AddNormPlan p;
  ASSERT_TRUE(PlanAddNormRing(Shape(2, 3360, 28672), &p));
  EXPECT_EQ(p.consumers, 16);
  EXPECT_EQ(p.rows, 16);
  EXPECT_EQ(p.stages, 3);
  EXPECT_EQ(p.items, 2);
}

TEST(AddNormPlanTest, ItemsDropWhereTwoStagesDoNotFit) {
  // 8B Q8_0 gate/up (4096 values: 4,352-byte rows) asked for 3 items: 24 rows x 2 stages would
  // take 209 KB, so it runs 2 items (16 rows) in 2 stages instead of declining.
  AddNormPlan p;
  ASSERT_TRUE(PlanAddNormRing(Shape(2, 4352, 28672, 16, 3, 3), &p));
  EXPECT_EQ(p.items, 2);
  EXPECT_EQ(p.rows, 16);
  EXPECT_EQ(p.stages, 2);
  EXPECT_LE(p.smem, 200 * 1024);
}

TEST(AddNormPlanTest, PerLanePartialsKeepTheOneBillionRingAndCostEightBillionAStage) {
  // 33 floats per item (every lane's partial sum, padded): 1B gate/up keeps its 4 stages; 8B
  // gate/up (218 rows a CTA, 2 steps: 57.8 KB of partials) drops from 4 stages to 3.
  AddNormShape one = Shape(1, 1152, 16384), eight = Shape(2, 2304, 28672);
  one.partial_floats = eight.partial_floats = 33;
  AddNormPlan p;
  ASSERT_TRUE(PlanAddNormRing(one, &p));
  EXPECT_EQ(p.partial_bytes, 16640);  // 126 x 33 x 4 = 16,632, rounded up to 16
  EXPECT_EQ(p.stages, 4);
  ASSERT_TRUE(PlanAddNormRing(eight, &p));
  EXPECT_EQ(p.partial_bytes, 57824);  // 219 x 2 x 33 x 4 = 57,816, rounded up to 16
  EXPECT_EQ(p.stages, 3);
  eight.partial_floats = 1;
  ASSERT_TRUE(PlanAddNormRing(eight, &p));
  EXPECT_EQ(p.stages, 4);
}

TEST(AddNormPlanTest, WithoutTheNormAnyRowLengthAndNoActivationRow) {
  // GemvQuantRing's 8B down projection: 14336-value Q4_K rows (7 steps, 8,064 bytes), 4096 rows.
  AddNormShape s = Shape(7, 8064, 4096, 16, 3, 3);
  AddNormPlan p;
  EXPECT_FALSE(PlanAddNormRing(s, &p));  // the norm needs two octets a thread: 28 warps
  s.norm = false;
  ASSERT_TRUE(PlanAddNormRing(s, &p));
  EXPECT_EQ(p.consumers, 14);
  EXPECT_EQ(p.rows, 6);
  EXPECT_EQ(p.stage_bytes, 48512);     // 6 x 8064 + 16, rounded up to 128
  EXPECT_EQ(p.partial_bytes, 928);     // (32 + 1) rows x 7 steps x 4 bytes, rounded up to 16
  EXPECT_EQ(p.smem, 3 * 48512 + 928);  // no activation row
}

TEST(AddNormPlanTest, DeclinesWhatCannotRun) {
  AddNormPlan p;
  EXPECT_FALSE(PlanAddNormRing(Shape(32, 1152, 4096), &p));       // more than 31 steps
  EXPECT_FALSE(PlanAddNormRing(Shape(2, 1152, 4096, 1), &p));     // 4096 values over 2 warps
  EXPECT_FALSE(PlanAddNormRing(Shape(1, 200 * 1024, 4096), &p));  // one row is the whole budget
  EXPECT_FALSE(PlanAddNormRing(Shape(1, 1152, 0), &p));           // no rows
  AddNormShape no_sms = Shape(1, 1152, 4096);
  no_sms.sms = 0;
  EXPECT_FALSE(PlanAddNormRing(no_sms, &p));
}

TEST(AddNormPlanTest, EveryPlanKeepsTheKernelsInvariants) {
  int planned = 0;
  for (int n_steps : {1, 2, 4, 7, 16})
    for (int64_t rb : {110, 144 * 8, 210 * 8, 34 * 64 * n_steps, 210 * 8 * n_steps})
      for (int total : {129, 1000, 16384, 57344})
        for (int warps : {8, 16, 24, 31})
          for (int stages : {2, 3, 4, 8})
            for (int items : {1, 2, 3, 4}) {
              const AddNormShape s = Shape(n_steps, rb, total, warps, stages, items);
              AddNormPlan p;
              if (!PlanAddNormRing(s, &p)) continue;
              ++planned;
              SCOPED_TRACE(testing::Message() << n_steps << " steps, " << rb << " bytes, " << total << " rows, "
                                              << warps << "/" << stages << "/" << items);
              EXPECT_EQ(p.consumers % n_steps, 0);
              EXPECT_LE(p.consumers, 31);  // plus the producer: at most 1,024 threads
              EXPECT_GE(p.stages, 2);
              EXPECT_LE(p.stages, std::max(2, stages));
              EXPECT_GE(p.items, 1);
              EXPECT_LE(p.items, items);
              EXPECT_EQ(p.rows, p.items * (p.consumers / n_steps));
              EXPECT_EQ(p.stage_bytes % 128, 0);
              EXPECT_GE(p.stage_bytes, p.rows * rb + s.smem_pad);
              EXPECT_LE(p.smem, s.max_smem);
              EXPECT_EQ(p.partial_bytes % 16, 0);
              EXPECT_GE(int64_t{p.partial_bytes}, ((total + p.grid - 1) / p.grid + 1) * int64_t{n_steps} * 4);
              EXPECT_EQ(p.grid, std::min(total, 132));
            }
  EXPECT_GT(planned, 1000);
}

}  // namespace
}  // namespace herd::cuda::internal
