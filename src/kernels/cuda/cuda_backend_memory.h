// CudaMemoryBackend: the memory half of CudaBackend (cuda_backend.cu) — device allocations,
// host/device copies (host_copies.h), weight uploads (weight_store.h), Synchronize — on one
// device and stream. The op half derives from it and says, through BeforeMemoryOp, what a memory
// operation must do first (refuse inside a graph pass, launch deferred ops, forget a prepared
// matmul input the copy may overwrite). Internal to the CUDA backend.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <span>

#include "kernels/backend.h"
#include "kernels/cuda/backend_switches.h"
#include "kernels/cuda/host_copies.h"
#include "kernels/cuda/weight_store.h"

namespace herd::cuda {

class CudaMemoryBackend : public Backend {
 public:
  // Takes ownership of `stream` (destroyed last, after the weights and copy buffers are freed).
  CudaMemoryBackend(int device, cudaStream_t stream);
  ~CudaMemoryBackend() override;

  void* Alloc(size_t bytes) override;  // zeroed, ordered before every later op; aborts when out of memory
  void Free(void* ptr) override;       // waits for the queued ops first
  void CopyToDevice(void* dst, const void* src, size_t bytes) override;
  void CopyToHost(void* dst, const void* src, size_t bytes) override;
  void CopyOnDevice(void* dst, const void* src, size_t bytes) override;
  uint64_t QueueCopyToHost(void* dst, const void* src, size_t bytes) override;
  void WaitCopyToHost(uint64_t ticket) override;
  void Synchronize() override;
  TensorView PrepareWeight(const TensorView& host) override;
  void PrepareWeightGroup(std::span<const TensorView> hosts, std::span<TensorView> out) override;
  bool DeviceMemory(size_t* free_bytes, size_t* total_bytes) const override;

 protected:
  // Called at the start of every memory operation but WaitCopyToHost. `overwrites`: it writes
  // device memory an op may have prepared as a matmul input (CopyToDevice, CopyOnDevice).
  virtual void BeforeMemoryOp(bool overwrites) = 0;
  // Makes this backend's GPU current on the calling thread (several backends may share a process).
  void Bind() const;

  const int device_;
  cudaStream_t stream_;
  const BackendSwitches sw_ = BackendSwitches::FromEnv();
  WeightStore weights_{stream_};
  HostCopies copies_{stream_, sw_.pinned_d2h, sw_.kernel_copies};
};

}  // namespace herd::cuda
