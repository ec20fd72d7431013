// The CUDA graphs of CudaBackend's BeginGraph / EndGraph (backend.h), one per key: the first pass
// of a key runs eagerly (lazily grown buffers reach their size), the second is captured from the
// stream and instantiated, later ones replay it (the caller skips the op calls while
// replaying()). One launch per forward pass instead of hundreds. Not thread-safe; the caller
// binds the device before each call.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <unordered_map>

namespace herd::cuda {

class StepGraphs {
 public:
  explicit StepGraphs(cudaStream_t stream) : stream_(stream) {}
  ~StepGraphs() { Clear(); }
  StepGraphs(const StepGraphs&) = delete;
  StepGraphs& operator=(const StepGraphs&) = delete;

  // Starts a pass of `key`: eager the first time, captured the second, a replay after that.
  void Begin(uint64_t key);
  // Ends the pass: instantiates a captured graph, then launches it (captured or replayed).
  void End();
  // Destroys every instantiated graph.
  void Clear();

  bool capturing() const { return capturing_; }
  bool replaying() const { return replaying_; }

 private:
  struct Graph {
    bool seen = false;  // ran eagerly once
    cudaGraphExec_t exec = nullptr;
  };
  cudaStream_t stream_;
  std::unordered_map<uint64_t, Graph> graphs_;
  Graph* current_ = nullptr;  // between Begin and End
  bool capturing_ = false;
  bool replaying_ = false;
};

}  // namespace herd::cuda
