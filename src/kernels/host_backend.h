// Shared memory handling of the backends that run on host memory (reference, CPU).
#pragma once

#include "kernels/backend.h"

namespace herd {

class HostBackend : public Backend {
 public:
  void* Alloc(size_t bytes) override;
  void Free(void* ptr) override;
  void CopyToDevice(void* dst, const void* src, size_t bytes) override;
  void CopyToHost(void* dst, const void* src, size_t bytes) override;
  void CopyOnDevice(void* dst, const void* src, size_t bytes) override;  // memcpy
  void Synchronize() override {}
  TensorView PrepareWeight(const TensorView& host_weight) override { return host_weight; }
  void GatherRows(const float* x, const int32_t* rows, int64_t n, int64_t n_cols, float* out) override;
};

}  // namespace herd
