// Keeps one small buffer (Backend::KeepInCache: the residual stream) in the GPU's L2 through a
// persisting access-policy window, so that reading it after the large one-pass streams of a
// layer (weights, ~300 MB of K/V per layer at 128 sequences, 50 MB of L2 on H100) hits L2.
// Off unless HERD_CUDA_L2_RESIDENT_MB > 0: that many MiB (at most the device's persisting
// limit) are set aside as persisting L2 and the window covers the buffer's first that many bytes
// (a decode batch's rows). The window goes on the stream (eager launches) and, since a captured
// graph need not keep it, on every kernel node of a graph before it is instantiated (ApplyTo).
// NOT yet measured on a GPU (added 2026-11-25 for the next A/B): every failure is logged once
// and leaves the cache as it was.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace herd::cuda {

class L2Residency {
 public:
  // HERD_CUDA_L2_RESIDENT_MB in bytes (0: off; read once).
  static size_t RequestedBytes();

  // Makes [ptr, ptr + bytes) (clipped) the persisting window of later launches on `stream`, on the
  // current device. False (and nothing changed) when off or unsupported.
  bool Set(cudaStream_t stream, const void* ptr, size_t bytes);
  // Gives every kernel node of `graph` the window (no-op when none is set).
  void ApplyTo(cudaGraph_t graph) const;

 private:
  bool active_ = false;
  cudaAccessPolicyWindow window_{};
};

}  // namespace herd::cuda
