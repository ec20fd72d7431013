#include "kernels/cuda/host_copies.h"

#include <algorithm>
#include <cstring>

#include "base/check.h"
#include "kernels/cuda/cuda_check.h"

namespace herd::cuda {
namespace {

size_t RoundUp(size_t n, size_t a) { return (n + a - 1) / a * a; }

}  // namespace

void HostCopies::FreeAll() {
  for (Chunk& c : staging_) cudaFreeHost(c.data);
  staging_.clear();
  staged_bytes_ = 0;
  if (d2h_ != nullptr) cudaFreeHost(d2h_);
  d2h_ = nullptr;
  d2h_bytes_ = 0;
  for (cudaEvent_t& e : d2h_events_) {
    if (e != nullptr) cudaEventDestroy(e);
    e = nullptr;
  }
  for (QueuedCopy& q : queued_) {
    if (q.pinned != nullptr) cudaFreeHost(q.pinned);
    if (q.done != nullptr) cudaEventDestroy(q.done);
    q = QueuedCopy{};
  }
}

void HostCopies::ToDevice(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  if (bytes > kDirectCopy) {
    HERD_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream_));
    HERD_CUDA_CHECK(cudaStreamSynchronize(stream_));
    return;
  }
  void* staged = Stage(bytes);
  std::memcpy(staged, src, bytes);
  if (kernel_copies_ && bytes <= kKernelCopyMax) return CopySmallByKernel(dst, staged, bytes, stream_);
  HERD_CUDA_CHECK(cudaMemcpyAsync(dst, staged, bytes, cudaMemcpyHostToDevice, stream_));
}

void HostCopies::ToHost(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  // Ordered after every queued op, so it is also correct without a prior synchronisation.
  if (pinned_to_host_ && bytes >= kPinnedMin && bytes <= kPinnedMax) return ToHostPinned(dst, src, bytes);
  HERD_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream_));
  HERD_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

// Chunk i's DMA is queued with all the others, then each chunk is copied out as soon as its event
// completes.
void HostCopies::ToHostPinned(void* dst, const void* src, size_t bytes) {
  if (bytes > d2h_bytes_) {
    if (d2h_ != nullptr) HERD_CUDA_CHECK(cudaFreeHost(d2h_));
    HERD_CUDA_CHECK(cudaMallocHost(&d2h_, bytes));
    d2h_bytes_ = bytes;
  }
  if (d2h_events_[0] == nullptr) {
    for (cudaEvent_t& e : d2h_events_) HERD_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  }
  const size_t chunk = RoundUp((bytes + kChunks - 1) / kChunks, 4096);
  int n = 0;
  for (size_t off = 0; off < bytes; off += chunk, ++n) {
    HERD_CUDA_CHECK(cudaMemcpyAsync(static_cast<uint8_t*>(d2h_) + off, static_cast<const uint8_t*>(src) + off,
                                    std::min(chunk, bytes - off), cudaMemcpyDeviceToHost, stream_));
    HERD_CUDA_CHECK(cudaEventRecord(d2h_events_[n], stream_));
  }
  n = 0;
  for (size_t off = 0; off < bytes; off += chunk, ++n) {
    HERD_CUDA_CHECK(cudaEventSynchronize(d2h_events_[n]));
    std::memcpy(static_cast<uint8_t*>(dst) + off, static_cast<const uint8_t*>(d2h_) + off,
                std::min(chunk, bytes - off));
  }
}

uint64_t HostCopies::Queue(void* dst, const void* src, size_t bytes) {
  constexpr int kSlots = Backend::kMaxQueuedCopies;
  HERD_CHECK_MSG(queued_issued_ - queued_waited_ < kSlots, "more than %d queued copies to the host", kSlots);
  QueuedCopy& q = queued_[queued_issued_ % kSlots];
  if (bytes > q.capacity) {
    if (q.pinned != nullptr) HERD_CUDA_CHECK(cudaFreeHost(q.pinned));
    q.capacity = std::max<size_t>(RoundUp(bytes, 4096), 4096);
    HERD_CUDA_CHECK(cudaMallocHost(&q.pinned, q.capacity));
  }
  if (q.done == nullptr) HERD_CUDA_CHECK(cudaEventCreateWithFlags(&q.done, cudaEventDisableTiming));
  if (kernel_copies_ && bytes <= kKernelCopyMax) {
    CopySmallByKernel(q.pinned, src, bytes, stream_);
  } else if (bytes > 0) {
    HERD_CUDA_CHECK(cudaMemcpyAsync(q.pinned, src, bytes, cudaMemcpyDeviceToHost, stream_));
  }
  HERD_CUDA_CHECK(cudaEventRecord(q.done, stream_));
  q.dst = dst;
  q.bytes = bytes;
  return queued_issued_++;
}

void HostCopies::Wait(uint64_t ticket) {
  HERD_CHECK_MSG(ticket == queued_waited_ && ticket < queued_issued_, "queued copy %llu waited out of order",
                 static_cast<unsigned long long>(ticket));
  QueuedCopy& q = queued_[ticket % Backend::kMaxQueuedCopies];
  HERD_CUDA_CHECK(cudaEventSynchronize(q.done));
  if (q.bytes > 0) std::memcpy(q.dst, q.pinned, q.bytes);
  ++queued_waited_;
}

void* HostCopies::Stage(size_t bytes) {
  if (staged_bytes_ + bytes > kStagingLimit) {
    HERD_CUDA_CHECK(cudaStreamSynchronize(stream_));
    Recycle();
  }
  const size_t need = RoundUp(bytes, 64);
  if (staging_.empty() || staging_.back().used + need > staging_.back().capacity) {
    const size_t cap = std::max(need, staging_.empty() ? kStagingChunk : 2 * staging_.back().capacity);
    Chunk c;
    HERD_CUDA_CHECK(cudaMallocHost(&c.data, cap));
    c.capacity = cap;
    staging_.push_back(c);
  }
  Chunk& c = staging_.back();
  void* p = static_cast<uint8_t*>(c.data) + c.used;
  c.used += need;
  staged_bytes_ += need;
  return p;
}

// Several chunks are merged into one of their total size, so the steady state is one chunk and
// no allocation.
void HostCopies::Recycle() {
  if (staging_.size() > 1) {
    size_t total = 0;
    for (Chunk& c : staging_) {
      total += c.capacity;
      HERD_CUDA_CHECK(cudaFreeHost(c.data));
    }
    staging_.clear();
    Chunk c;
    HERD_CUDA_CHECK(cudaMallocHost(&c.data, std::min(total, kStagingLimit)));
    c.capacity = std::min(total, kStagingLimit);
    staging_.push_back(c);
  }
  for (Chunk& c : staging_) c.used = 0;
  staged_bytes_ = 0;
}

}  // namespace herd::cuda
