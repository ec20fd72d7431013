#include "io/file_identity.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <vector>

#include "base/hash.h"

namespace herd {
namespace {

constexpr uint64_t kEdgeBytes = uint64_t{1} << 20;    // first and last 1 MiB
constexpr uint64_t kPageBytes = uint64_t{4} << 10;    // one 4 KiB page ...
constexpr uint64_t kPageStride = uint64_t{64} << 20;  // ... at every multiple of 64 MiB

struct Region {
  uint64_t offset, size;
};

std::vector<Region> SampledRegions(uint64_t size) {
  std::vector<Region> r;
  r.push_back({0, std::min(size, kEdgeBytes)});
  for (uint64_t off = kPageStride; off < size; off += kPageStride) r.push_back({off, std::min(kPageBytes, size - off)});
  const uint64_t tail = std::min(size, kEdgeBytes);
  r.push_back({size - tail, tail});
  return r;
}

// Absorbs the region's place and bytes (little-endian 8-byte words, the last one zero-padded).
uint64_t HashRegion(uint64_t h, const Region& region, const uint8_t* data) {
  h = HashAbsorb(h, region.offset);
  h = HashAbsorb(h, region.size);
  uint64_t i = 0;
  for (; i + 8 <= region.size; i += 8) {
    uint64_t w;
    std::memcpy(&w, data + i, 8);
    if constexpr (std::endian::native == std::endian::big) w = __builtin_bswap64(w);
    h = HashAbsorb(h, w);
  }
  if (i < region.size) {
    uint64_t w = 0;
    for (uint64_t k = 0; i + k < region.size; ++k) w |= static_cast<uint64_t>(data[i + k]) << (8 * k);
    h = HashAbsorb(h, w);
  }
  return h;
}

std::string Format(uint64_t size, uint64_t h) {
  return StrFormat("%llu-%016llx", static_cast<unsigned long long>(size), static_cast<unsigned long long>(h));
}

constexpr uint64_t kSeed = 0x66696c652d696431ULL;  // "file-id1"

}  // namespace

std::string FileIdentity(std::span<const uint8_t> bytes) {
  const uint64_t size = bytes.size();
  uint64_t h = HashAbsorb(kSeed, size);
  for (const Region& r : SampledRegions(size)) h = HashRegion(h, r, bytes.data() + r.offset);
  return Format(size, h);
}

std::string FileIdentity(const MappedFile& file) {
  return FileIdentity(std::span<const uint8_t>(file.data(), file.size()));
}

Result<std::string> FileIdentityAt(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    std::string msg = path + ": " + std::strerror(err);
    return err == ENOENT ? NotFound(msg) : IoError(msg);
  }
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st;
  if (fstat(fd, &st) != 0) return IoError(path + ": fstat: " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return IoError(path + ": not a regular file");
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  uint64_t h = HashAbsorb(kSeed, size);
  std::vector<uint8_t> buf;
  for (const Region& r : SampledRegions(size)) {
    buf.resize(r.size);
    uint64_t got = 0;
    while (got < r.size) {
      const ssize_t n = ::pread(fd, buf.data() + got, r.size - got, static_cast<off_t>(r.offset + got));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return IoError(path + ": read: " + std::strerror(errno));
      if (n == 0) return IoError(path + ": the file shrank while its identity was read");
      got += static_cast<uint64_t>(n);
    }
    h = HashRegion(h, r, buf.data());
  }
  return Format(size, h);
}

}  // namespace herd
