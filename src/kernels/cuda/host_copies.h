// Copies between host memory and the GPU for CudaBackend, ordered on its one stream.
//
// ToDevice: through a pinned staging arena (the source is memcpy'd into it and the DMA queued),
// so the caller's buffer may die as soon as the call returns and the copy stays ordered with the
// ops, without waiting for the GPU. The arena is recycled by Recycle() after a stream
// synchronisation (every staged copy done) and bounded: past kStagingLimit bytes between
// synchronisations ToDevice synchronises by itself. Copies over kDirectCopy bytes go straight
// from the source, then wait.
// ToHost: kPinnedMin..kPinnedMax bytes (a decode step's logits) land in a pinned buffer in up to
// kChunks pieces, each copied out while the next one is in flight (a pageable destination would
// make the driver stage the copy itself, more slowly); other sizes, or pinned = false
// (HERD_CUDA_PINNED_D2H=0), copy straight into the destination. Both wait for the copy.
// Queue / Wait (a pipelined decode step's token ids): the copy lands in one of
// Backend::kMaxQueuedCopies pinned slots behind an event and is copied out when waited for, so the
// host can queue the next pass before this one is done; tickets are waited for in issue order.
// Copies of up to kKernelCopyMax bytes in ToDevice (from the staging arena) and Queue (into the
// slot) run as one small kernel reading or writing the pinned host memory through unified
// addressing (CopySmallByKernel) instead of a DMA, unless kernel_copies is false
// (HERD_CUDA_KERNEL_COPIES=0).
// The caller makes the right device current before each call (several GPUs per process).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/backend.h"

namespace herd::cuda {

// dst = src for `bytes` bytes as one CTA on `stream`, either side pinned host memory (unified
// addressing: cudaMallocHost memory is device-addressable) or device memory (host_copy_kernel.cu).
void CopySmallByKernel(void* dst, const void* src, size_t bytes, cudaStream_t stream);

class HostCopies {
 public:
  HostCopies(cudaStream_t stream, bool pinned_to_host, bool kernel_copies)
      : stream_(stream), pinned_to_host_(pinned_to_host), kernel_copies_(kernel_copies) {}
  ~HostCopies() { FreeAll(); }
  HostCopies(const HostCopies&) = delete;
  HostCopies& operator=(const HostCopies&) = delete;

  void ToDevice(void* dst, const void* src, size_t bytes);
  void ToHost(void* dst, const void* src, size_t bytes);
  uint64_t Queue(void* dst, const void* src, size_t bytes);
  void Wait(uint64_t ticket);
  // After a stream synchronisation: every staged copy is done, the arena is free again.
  void Recycle();
  // Frees the pinned buffers and events; called by the owner with its device current.
  void FreeAll();

 private:
  static constexpr size_t kStagingLimit = size_t{256} << 20;  // pinned bytes queued between syncs
  static constexpr size_t kStagingChunk = size_t{4} << 20;    // first arena chunk
  static constexpr size_t kDirectCopy = size_t{64} << 20;     // larger host copies: direct, then wait
  static constexpr size_t kPinnedMin = size_t{64} << 10;      // smaller device-to-host copies: direct
  static constexpr size_t kPinnedMax = size_t{16} << 20;      // larger ones: direct (bulk, not latency)
  static constexpr int kChunks = 4;
  static constexpr size_t kKernelCopyMax = size_t{16} << 10;  // larger staged / queued copies: DMA

  struct Chunk {
    void* data = nullptr;
    size_t capacity = 0;
    size_t used = 0;
  };
  struct QueuedCopy {
    void* pinned = nullptr;  // capacity bytes
    size_t capacity = 0;
    cudaEvent_t done = nullptr;
    void* dst = nullptr;
    size_t bytes = 0;
  };

  void* Stage(size_t bytes);  // pinned space untouched until the next Recycle()
  void ToHostPinned(void* dst, const void* src, size_t bytes);

  cudaStream_t stream_;
  const bool pinned_to_host_;
  const bool kernel_copies_;
  std::vector<Chunk> staging_;
  size_t staged_bytes_ = 0;
  void* d2h_ = nullptr;  // pinned, d2h_bytes_
  size_t d2h_bytes_ = 0;
  cudaEvent_t d2h_events_[kChunks] = {};
  QueuedCopy queued_[Backend::kMaxQueuedCopies];
  uint64_t queued_issued_ = 0, queued_waited_ = 0;
};

}  // namespace herd::cuda
