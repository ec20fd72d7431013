// MakeBackend / ParseDevice: the one place that knows which backends this binary has.
#include <charconv>

#include "kernels/backend.h"
#ifdef HERD_HAVE_CUDA
#include "kernels/cuda/cuda_backend.h"
#endif

namespace herd {

std::string DeviceSpec::ToString() const { return cuda ? "cuda:" + std::to_string(index) : "cpu"; }

Result<DeviceSpec> ParseDevice(std::string_view text) {
  DeviceSpec d;
  if (text == "cpu") return d;
  if (text == "cuda" || text == "gpu") {
    d.cuda = true;
    return d;
  }
  constexpr std::string_view kCuda = "cuda:";
  if (text.starts_with(kCuda)) {
    const std::string_view n = text.substr(kCuda.size());
    const auto [end, ec] = std::from_chars(n.data(), n.data() + n.size(), d.index);
    if (ec == std::errc() && end == n.data() + n.size() && !n.empty() && d.index >= 0) {
      d.cuda = true;
      return d;
    }
  }
  return InvalidArgument("unknown device '" + std::string(text) + "' (expected cpu, cuda or cuda:N)");
}

bool CudaBuilt() {
#ifdef HERD_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

Result<std::unique_ptr<Backend>> MakeBackend(const DeviceSpec& device, int n_threads) {
  if (!device.cuda) return MakeCpuBackend(n_threads);
#ifdef HERD_HAVE_CUDA
  return cuda::MakeCudaBackend(device.index);
#else
  return Unimplemented("device " + device.ToString() + ": this herd was built without CUDA (nvcc was not found)");
#endif
}

}  // namespace herd
