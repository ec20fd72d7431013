#include "kernels/cuda/l2_residency.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <vector>

#include "base/log.h"

namespace herd::cuda {
namespace {

// Logs the first failure of the process (a hint: nothing else to do) and clears the error.
bool Ok(cudaError_t err, const char* what) {
  if (err == cudaSuccess) return true;
  static std::atomic<bool> logged{false};
  if (!logged.exchange(true)) HERD_LOG(kWarn, "L2 residency: %s: %s", what, cudaGetErrorString(err));
  cudaGetLastError();
  return false;
}

}  // namespace

size_t L2Residency::RequestedBytes() {
  static const size_t bytes = [] {
    const char* e = std::getenv("HERD_CUDA_L2_RESIDENT_MB");
    const long long mb = e == nullptr ? 0 : std::atoll(e);
    return mb > 0 ? static_cast<size_t>(mb) << 20 : size_t{0};
  }();
  return bytes;
}

bool L2Residency::Set(cudaStream_t stream, const void* ptr, size_t bytes) {
  const size_t want = RequestedBytes();
  if (want == 0 || ptr == nullptr || bytes == 0) return false;
  int device = 0, max_persist = 0, max_window = 0;
  if (!Ok(cudaGetDevice(&device), "cudaGetDevice") ||
      !Ok(cudaDeviceGetAttribute(&max_persist, cudaDevAttrMaxPersistingL2CacheSize, device), "persisting size") ||
      !Ok(cudaDeviceGetAttribute(&max_window, cudaDevAttrMaxAccessPolicyWindowSize, device), "window size")) {
    return false;
  }
  const size_t limit = std::min(want, static_cast<size_t>(std::max(max_persist, 0)));
  const size_t window = std::min({bytes, limit, static_cast<size_t>(std::max(max_window, 0))});
  if (window == 0 || !Ok(cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, limit), "cudaDeviceSetLimit")) return false;
  cudaAccessPolicyWindow w{};
  w.base_ptr = const_cast<void*>(ptr);
  w.num_bytes = window;
  w.hitRatio = 1.0f;
  w.hitProp = cudaAccessPropertyPersisting;
  w.missProp = cudaAccessPropertyStreaming;
  cudaStreamAttrValue v{};
  v.accessPolicyWindow = w;
  if (!Ok(cudaStreamSetAttribute(stream, cudaStreamAttributeAccessPolicyWindow, &v), "cudaStreamSetAttribute")) {
    return false;
  }
  window_ = w;
  active_ = true;
  return true;
}

void L2Residency::ApplyTo(cudaGraph_t graph) const {
  if (!active_) return;
  size_t n = 0;
  if (!Ok(cudaGraphGetNodes(graph, nullptr, &n), "cudaGraphGetNodes")) return;
  std::vector<cudaGraphNode_t> nodes(n);
  if (!Ok(cudaGraphGetNodes(graph, nodes.data(), &n), "cudaGraphGetNodes")) return;
  cudaKernelNodeAttrValue v{};
  v.accessPolicyWindow = window_;
  for (cudaGraphNode_t node : nodes) {
    cudaGraphNodeType type;
    if (!Ok(cudaGraphNodeGetType(node, &type), "cudaGraphNodeGetType") || type != cudaGraphNodeTypeKernel) continue;
    if (!Ok(cudaGraphKernelNodeSetAttribute(node, cudaKernelNodeAttributeAccessPolicyWindow, &v), "node attribute")) {
      return;
    }
  }
}

}  // namespace herd::cuda
