#include "kernels/cuda/step_graphs.h"

#include "base/check.h"
#include "kernels/cuda/cuda_check.h"

namespace herd::cuda {

void StepGraphs::Begin(uint64_t key) {
  HERD_CHECK_MSG(!capturing_ && !replaying_, "nested BeginGraph");
  Graph& g = graphs_[key];
  current_ = &g;
  if (g.exec != nullptr) {
    replaying_ = true;
  } else if (g.seen) {
    HERD_CUDA_CHECK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
    capturing_ = true;
  } else {
    g.seen = true;  // the eager first pass
  }
}

void StepGraphs::End() {
  if (current_ == nullptr) return;
  Graph& g = *current_;
  current_ = nullptr;
  if (capturing_) {
    capturing_ = false;
    cudaGraph_t graph = nullptr;
    HERD_CUDA_CHECK(cudaStreamEndCapture(stream_, &graph));
    HERD_CUDA_CHECK(cudaGraphInstantiate(&g.exec, graph, 0));
    HERD_CUDA_CHECK(cudaGraphDestroy(graph));
  } else if (!replaying_) {
    return;
  }
  replaying_ = false;
  HERD_CUDA_CHECK(cudaGraphLaunch(g.exec, stream_));
}

void StepGraphs::Clear() {
  for (auto& [key, g] : graphs_) {
    if (g.exec != nullptr) cudaGraphExecDestroy(g.exec);
  }
  graphs_.clear();
  current_ = nullptr;
}

}  // namespace herd::cuda
