// Kernel timeline of an unmodified CUDA program, for the device machine (no Nsight Systems
// there, and ncu times kernels one at a time, outside their CUDA graph): a CUDA injection library.
// The driver loads it at initialization when CUDA_INJECTION64_PATH names it and calls
// InitializeInjection, which turns on CUPTI's concurrent-kernel activity records: one record per
// kernel, graph-launched kernel nodes included, with GPU start / end timestamps (ns) — PDL overlap
// and launch gaps are kept, unlike under ncu. At exit the records go to $HERD_TIMELINE_OUT
// (default /tmp/kernel_timeline.csv) as CSV:
//   start_ns,end_ns,graph_id,graph_node_id,correlation_id,grid_x,grid_y,grid_z,block_x,name
// Usage (bench/cuda/timeline.sh wraps it with the summary):
//   CUDA_INJECTION64_PATH=$PWD/libherd_kernel_timeline.so HERD_TIMELINE_OUT=/tmp/t.csv herd bench-model ...
// Cost: CUPTI adds ~1 µs of bookkeeping per kernel on the host side; GPU-side kernel times are
// as without it (the concurrent-kernel mode does not serialize kernels).
#include <cupti.h>
#include <cxxabi.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

namespace {

constexpr size_t kBufferBytes = size_t{8} << 20;

struct Record {
  uint64_t start, end, graph_node_id;
  uint32_t graph_id, correlation_id;
  int32_t grid[3], block_x;
  std::string name;
};

std::mutex g_mu;
std::vector<Record> g_records;

std::string Demangle(const char* name) {
  if (name == nullptr) return "?";
  int status = 0;
  char* d = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  std::string out = status == 0 && d != nullptr ? d : name;
  std::free(d);
  for (char& c : out) {
    if (c == ',') c = ';';  // keep the CSV's columns
  }
  return out;
}

void CUPTIAPI BufferRequested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *size = kBufferBytes;
  *max_records = 0;
}

void CUPTIAPI BufferCompleted(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  CUpti_Activity* rec = nullptr;
  std::vector<Record> batch;
  while (cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) {
    if (rec->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && rec->kind != CUPTI_ACTIVITY_KIND_KERNEL) continue;
    const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(rec);
    batch.push_back(Record{k->start, k->end, k->graphNodeId, k->graphId, k->correlationId,
                           {k->gridX, k->gridY, k->gridZ}, k->blockX, Demangle(k->name)});
  }
  std::free(buffer);
  const std::lock_guard<std::mutex> lock(g_mu);
  for (Record& r : batch) g_records.push_back(std::move(r));
}

void WriteAtExit() {
  cuptiActivityFlushAll(1);
  const char* path = std::getenv("HERD_TIMELINE_OUT");
  if (path == nullptr) path = "/tmp/kernel_timeline.csv";
  FILE* f = std::fopen(path, "w");
  if (f == nullptr) {
    std::fprintf(stderr, "kernel_timeline: cannot write %s\n", path);
    return;
  }
  const std::lock_guard<std::mutex> lock(g_mu);
  std::fprintf(f, "start_ns,end_ns,graph_id,graph_node_id,correlation_id,grid_x,grid_y,grid_z,block_x,name\n");
  for (const Record& r : g_records) {
    std::fprintf(f, "%llu,%llu,%u,%llu,%u,%d,%d,%d,%d,%s\n", static_cast<unsigned long long>(r.start),
                 static_cast<unsigned long long>(r.end), r.graph_id, static_cast<unsigned long long>(r.graph_node_id),
                 r.correlation_id, r.grid[0], r.grid[1], r.grid[2], r.block_x, r.name.c_str());
  }
  std::fclose(f);
  std::fprintf(stderr, "kernel_timeline: %zu kernels -> %s\n", g_records.size(), path);
}

bool Ok(CUptiResult r, const char* what) {
  if (r == CUPTI_SUCCESS) return true;
  const char* msg = nullptr;
  cuptiGetResultString(r, &msg);
  std::fprintf(stderr, "kernel_timeline: %s failed: %s\n", what, msg != nullptr ? msg : "?");
  return false;
}

}  // namespace

extern "C" int InitializeInjection() {
  if (!Ok(cuptiActivityRegisterCallbacks(BufferRequested, BufferCompleted), "cuptiActivityRegisterCallbacks") ||
      !Ok(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), "cuptiActivityEnable")) {
    return 0;
  }
  std::atexit(WriteAtExit);
  return 1;
}
