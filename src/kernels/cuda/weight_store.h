// Model weights in GPU memory (CudaBackend::PrepareWeight): uploaded once in their file layout
// (quantized blocks stay quantized), the same host tensor once (tied embeddings), freed with the
// store. Load time only: every upload waits for its copy.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <map>
#include <span>
#include <tuple>
#include <vector>

#include "tensor/tensor.h"

namespace herd::cuda {

class WeightStore {
 public:
  explicit WeightStore(cudaStream_t stream) : stream_(stream) {}
  ~WeightStore() { FreeAll(); }
  WeightStore(const WeightStore&) = delete;
  WeightStore& operator=(const WeightStore&) = delete;

  // The device view of `host` (data == nullptr when the GPU is out of memory).
  TensorView Upload(const TensorView& host);
  // Uploads hosts back to back in one allocation (each at a 256-byte aligned offset, so weights
  // whose sizes are multiples of 256 bytes end where the next begins: MatMulRunner can then run
  // them as one matrix); out[i] is the view of hosts[i]. A host already uploaded keeps its view
  // and the group is uploaded one by one.
  void UploadGroup(std::span<const TensorView> hosts, std::span<TensorView> out);
  // Frees every weight (the views become invalid); called by the owner on its device.
  void FreeAll();

 private:
  using Key = std::tuple<const void*, int, int64_t, int64_t, int64_t, int64_t>;
  static Key KeyOf(const TensorView& host);
  void* Allocate(size_t bytes, const TensorView& what);  // nullptr (logged) when out of memory

  cudaStream_t stream_;
  std::map<Key, TensorView> views_;
  std::vector<void*> allocations_;
};

}  // namespace herd::cuda
