#include "kernels/cuda/weight_store.h"

#include <string>

#include "base/check.h"
#include "base/log.h"
#include "kernels/cuda/cuda_check.h"

namespace herd::cuda {
namespace {

constexpr size_t kAlign = 256;
size_t RoundUp(size_t n, size_t a) { return (n + a - 1) / a * a; }

}  // namespace

void WeightStore::FreeAll() {
  for (void* p : allocations_) cudaFree(p);
  allocations_.clear();
  views_.clear();
}

WeightStore::Key WeightStore::KeyOf(const TensorView& host) {
  return {host.data, static_cast<int>(host.type), host.ne[0], host.ne[1], host.ne[2], host.ne[3]};
}

void* WeightStore::Allocate(size_t bytes, const TensorView& what) {
  void* p = nullptr;
  if (cudaMalloc(&p, RoundUp(bytes == 0 ? 1 : bytes, kAlign)) == cudaSuccess) {
    allocations_.push_back(p);
    return p;
  }
  cudaGetLastError();
  size_t free_b = 0, total_b = 0;
  cudaMemGetInfo(&free_b, &total_b);
  HERD_LOG(kError, "out of GPU memory uploading a %s weight %s (%zu bytes; %zu of %zu free)",
           std::string(DTypeName(what.type)).c_str(), what.ShapeString().c_str(), bytes, free_b, total_b);
  return nullptr;
}

TensorView WeightStore::Upload(const TensorView& host) {
  const Key key = KeyOf(host);
  if (auto it = views_.find(key); it != views_.end()) return it->second;
  TensorView dev = host;
  dev.data = Allocate(host.bytes(), host);
  if (dev.data == nullptr) return dev;  // the loader turns this into an error
  // Load time only: a plain copy from the (pageable) file mapping, then wait.
  HERD_CUDA_CHECK(cudaMemcpyAsync(dev.data, host.data, host.bytes(), cudaMemcpyHostToDevice, stream_));
  HERD_CUDA_CHECK(cudaStreamSynchronize(stream_));
  views_.emplace(key, dev);
  return dev;
}

void WeightStore::UploadGroup(std::span<const TensorView> hosts, std::span<TensorView> out) {
  HERD_CHECK(hosts.size() == out.size());
  size_t total = 0;
  bool fresh = true;
  for (const TensorView& h : hosts) {
    total += RoundUp(h.bytes(), kAlign);
    fresh = fresh && views_.find(KeyOf(h)) == views_.end();
  }
  if (!fresh || hosts.size() < 2) {
    for (size_t i = 0; i < hosts.size(); ++i) out[i] = Upload(hosts[i]);
    return;
  }
  auto* base = static_cast<uint8_t*>(Allocate(total, hosts[0]));
  size_t offset = 0;
  for (size_t i = 0; i < hosts.size(); ++i) {
    out[i] = hosts[i];
    out[i].data = base == nullptr ? nullptr : base + offset;
    if (base == nullptr) continue;  // the loader turns this into an error
    HERD_CUDA_CHECK(cudaMemcpyAsync(out[i].data, hosts[i].data, hosts[i].bytes(), cudaMemcpyHostToDevice, stream_));
    offset += RoundUp(hosts[i].bytes(), kAlign);
    views_.emplace(KeyOf(hosts[i]), out[i]);
  }
  HERD_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

}  // namespace herd::cuda
