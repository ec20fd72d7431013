// BackendSwitches::FromEnv on the host (no GPU needed): defaults, each switch read, and the
// dependencies (HERD_CUDA_FUSE=0 turns the input fusions off; 0 turns a column limit off).
#include "kernels/cuda/backend_switches.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace herd::cuda {
namespace {

constexpr const char* kNames[] = {"HERD_CUDA_GRAPHS",         "HERD_CUDA_PINNED_D2H",    "HERD_CUDA_FUSE",
                                  "HERD_CUDA_FUSE_INPUT",     "HERD_CUDA_NORM_IN_GEMV",  "HERD_CUDA_NORM_IN_QKV",
                                  "HERD_CUDA_ATTN_QUANT_OUT", "HERD_CUDA_ATTN_HALF_OUT", "HERD_CUDA_NORM_IN_GEMV_Q8_0",
                                  "HERD_CUDA_KERNEL_COPIES"};

using Vars = std::vector<std::pair<const char*, const char*>>;

// Sets the given variables (the others unset) for the test's scope; restores them after.
class ScopedEnv {
 public:
  explicit ScopedEnv(const Vars& vars) {
    for (const char* name : kNames) {
      const char* old = std::getenv(name);
      saved_.emplace_back(name, old == nullptr ? std::string() : std::string(old), old != nullptr);
      unsetenv(name);
    }
    for (const auto& [name, value] : vars) setenv(name, value, 1);
  }
  ~ScopedEnv() {
    for (const auto& [name, value, was_set] : saved_) {
      if (was_set) {
        setenv(name, value.c_str(), 1);
      } else {
        unsetenv(name);
      }
    }
  }

 private:
  std::vector<std::tuple<const char*, std::string, bool>> saved_;
};

TEST(BackendSwitchesTest, DefaultsWithoutEnvironment) {
  ScopedEnv env(Vars{});
  const BackendSwitches s = BackendSwitches::FromEnv();
  EXPECT_TRUE(s.graphs);
  EXPECT_TRUE(s.pinned_d2h);
  EXPECT_TRUE(s.kernel_copies);
  EXPECT_TRUE(s.fuse);
  EXPECT_TRUE(s.fuse_inputs);
  EXPECT_EQ(s.norm_in_gemv_max_cols, 4096);
  EXPECT_EQ(s.norm_in_qkv_min_cols, 4096);
  EXPECT_EQ(s.norm_in_gemv_q8_0_min_cols, 4096);
  EXPECT_TRUE(s.attn_quant_out);
  EXPECT_TRUE(s.attn_half_out);
}

TEST(BackendSwitchesTest, EachSwitchIsRead) {
  ScopedEnv env(Vars{{"HERD_CUDA_GRAPHS", "0"},
                     {"HERD_CUDA_PINNED_D2H", "0"},
                     {"HERD_CUDA_KERNEL_COPIES", "0"},
                     {"HERD_CUDA_NORM_IN_GEMV", "2048"},
                     {"HERD_CUDA_NORM_IN_QKV", "8192"},
                     {"HERD_CUDA_ATTN_QUANT_OUT", "0"},
                     {"HERD_CUDA_ATTN_HALF_OUT", "0"},
                     {"HERD_CUDA_NORM_IN_GEMV_Q8_0", "1"}});
  const BackendSwitches s = BackendSwitches::FromEnv();
  EXPECT_EQ(s.norm_in_gemv_q8_0_min_cols, 1);
  EXPECT_FALSE(s.graphs);
  EXPECT_FALSE(s.pinned_d2h);
  EXPECT_FALSE(s.kernel_copies);
  EXPECT_TRUE(s.fuse_inputs);
  EXPECT_EQ(s.norm_in_gemv_max_cols, 2048);
  EXPECT_EQ(s.norm_in_qkv_min_cols, 8192);
  EXPECT_FALSE(s.attn_quant_out);
  EXPECT_FALSE(s.attn_half_out);
}

TEST(BackendSwitchesTest, ZeroTurnsTheColumnLimitsOff) {
  ScopedEnv env(
      Vars{{"HERD_CUDA_NORM_IN_GEMV", "0"}, {"HERD_CUDA_NORM_IN_QKV", "0"}, {"HERD_CUDA_NORM_IN_GEMV_Q8_0", "0"}});
  const BackendSwitches s = BackendSwitches::FromEnv();
  EXPECT_EQ(s.norm_in_gemv_max_cols, 0);         // no row is short enough
  EXPECT_EQ(s.norm_in_qkv_min_cols, INT64_MAX);  // no row is long enough
  EXPECT_EQ(s.norm_in_gemv_q8_0_min_cols, INT64_MAX);
}

TEST(BackendSwitchesTest, FuseOffTurnsTheInputFusionsOff) {
  for (const char* name : {"HERD_CUDA_FUSE", "HERD_CUDA_FUSE_INPUT"}) {
    SCOPED_TRACE(name);
    ScopedEnv env(Vars{{name, "0"}});
    const BackendSwitches s = BackendSwitches::FromEnv();
    EXPECT_EQ(s.fuse, std::string(name) != "HERD_CUDA_FUSE");
    EXPECT_FALSE(s.fuse_inputs);
    EXPECT_EQ(s.norm_in_gemv_max_cols, 0);
    EXPECT_FALSE(s.attn_quant_out);
    EXPECT_FALSE(s.attn_half_out);
  }
}

}  // namespace
}  // namespace herd::cuda
