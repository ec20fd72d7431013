#include "kv/prefix_store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <unordered_set>

#include "base/check.h"
#include "base/hash.h"

namespace herd {
namespace {

constexpr uint8_t kMagic[8] = {'H', 'E', 'R', 'D', 'K', 'V', 'P', 'C'};
constexpr uint32_t kVersion = 1;
constexpr size_t kFixedHeader = 8 + 4 + 4 + 8 + 8 + 8 + 4;  // magic .. key length
constexpr uint32_t kMaxKeyBytes = 1 << 16;
constexpr uint64_t kRecordHeader = 16;  // block hash, checksum

uint64_t GetLe(const uint8_t* p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

void PutLe(std::vector<uint8_t>& out, uint64_t v, int n) {
  for (int i = 0; i < n; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

// 64-bit checksum of bytes (little-endian words, the last one zero-padded). Detects any
// corruption of a few bits with certainty and random corruption with probability 1 - 2^-64.
uint64_t Checksum(const uint8_t* p, size_t n) {
  uint64_t h = HashAbsorb(0x6b762d626c6f636bULL, n);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) h = HashAbsorb(h, GetLe(p + i, 8));
  if (i < n) h = HashAbsorb(h, GetLe(p + i, static_cast<int>(n - i)));
  return h;
}

std::string Errno(const std::string& path, const char* what) {
  return path + ": " + what + ": " + std::strerror(errno);
}

Status WriteAll(int fd, const void* data, size_t n, const std::string& path) {
  const uint8_t* p = static_cast<const uint8_t*>(data);
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return IoError(Errno(path, "write"));
    p += w;
    n -= static_cast<size_t>(w);
  }
  return Status::Ok();
}

// Reads exactly n bytes at `offset` (the size was validated, so a short read means the file
// changed under us).
Status ReadAt(int fd, void* data, size_t n, uint64_t offset, const std::string& path) {
  uint8_t* p = static_cast<uint8_t*>(data);
  while (n > 0) {
    const ssize_t r = ::pread(fd, p, n, static_cast<off_t>(offset));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return IoError(Errno(path, "read"));
    if (r == 0) return InvalidArgument("prefix cache file " + path + ": truncated while it was read");
    p += r;
    n -= static_cast<size_t>(r);
    offset += static_cast<uint64_t>(r);
  }
  return Status::Ok();
}

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

struct Header {
  uint32_t version = 0, block_size = 0;
  BlockHash root = 0;
  uint64_t block_bytes = 0, count = 0;
  std::string key;
  uint64_t size = 0;  // of the header in the file
};

Status Corrupt(const std::string& path, const std::string& why) {
  return InvalidArgument("prefix cache file " + path + ": " + why);
}

// Reads and validates the header against the manager and cache, and the file size.
Result<Header> ReadHeader(int fd, uint64_t file_size, const std::string& path, const KvCacheManager& kv,
                          const KvCache& cache) {
  if (file_size < kFixedHeader) {
    return Corrupt(path, StrFormat("truncated: %llu bytes, the header alone needs %zu",
                                   static_cast<unsigned long long>(file_size), kFixedHeader + 8));
  }
  std::vector<uint8_t> head(kFixedHeader);
  HERD_RETURN_IF_ERROR(ReadAt(fd, head.data(), head.size(), 0, path));
  if (std::memcmp(head.data(), kMagic, sizeof(kMagic)) != 0)
    return Corrupt(path, "not a herd prefix cache (bad magic)");
  Header h;
  h.version = static_cast<uint32_t>(GetLe(&head[8], 4));
  if (h.version != kVersion) {
    return Corrupt(path, StrFormat("format version %u; this herd reads version %u", h.version, kVersion));
  }
  h.block_size = static_cast<uint32_t>(GetLe(&head[12], 4));
  h.root = GetLe(&head[16], 8);
  h.block_bytes = GetLe(&head[24], 8);
  h.count = GetLe(&head[32], 8);
  const uint32_t key_bytes = static_cast<uint32_t>(GetLe(&head[40], 4));
  if (key_bytes > kMaxKeyBytes) return Corrupt(path, StrFormat("corrupt header (cache key of %u bytes)", key_bytes));
  h.size = kFixedHeader + key_bytes + 8;
  if (file_size < h.size) {
    return Corrupt(path,
                   StrFormat("truncated: %llu bytes, the header needs %llu", static_cast<unsigned long long>(file_size),
                             static_cast<unsigned long long>(h.size)));
  }
  head.resize(static_cast<size_t>(h.size));
  HERD_RETURN_IF_ERROR(ReadAt(fd, head.data() + kFixedHeader, key_bytes + 8, kFixedHeader, path));
  if (Checksum(head.data(), h.size - 8) != GetLe(head.data() + h.size - 8, 8)) {
    return Corrupt(path, "corrupt header (checksum mismatch)");
  }
  h.key.assign(reinterpret_cast<const char*>(head.data() + kFixedHeader), key_bytes);
  if (h.root != kv.root_hash()) {
    return Corrupt(path, "written for another model, KV type or block size: its cache key is '" + h.key +
                             "', this cache's is '" + kv.cache_key() + "'");
  }
  if (h.block_size != static_cast<uint32_t>(kv.block_size()) || h.block_bytes != cache.BlockBytes()) {
    return Corrupt(
        path, StrFormat("blocks of %u tokens and %llu bytes; this cache's are %d tokens and %zu bytes", h.block_size,
                        static_cast<unsigned long long>(h.block_bytes), kv.block_size(), cache.BlockBytes()));
  }
  const uint64_t record = kRecordHeader + h.block_bytes;
  const uint64_t body = file_size - h.size;
  if (h.count > body / record) {
    return Corrupt(path, StrFormat("truncated: %llu bytes, %llu blocks need %llu more after the header",
                                   static_cast<unsigned long long>(file_size), static_cast<unsigned long long>(h.count),
                                   static_cast<unsigned long long>(h.count) * record));
  }
  if (body != h.count * record) {
    return Corrupt(path, StrFormat("%llu unexpected bytes after block %llu",
                                   static_cast<unsigned long long>(body - h.count * record),
                                   static_cast<unsigned long long>(h.count)));
  }
  return h;
}

}  // namespace

Status SavePrefixCache(const std::string& path, const KvCacheManager& kv, const KvCache& cache,
                       const std::vector<std::pair<BlockHash, int32_t>>& blocks) {
  HERD_CHECK(cache.config().block_size == kv.block_size() && cache.config().n_blocks == kv.pool().n_blocks());
  std::vector<std::pair<BlockHash, int32_t>> unique;
  std::unordered_set<BlockHash> seen;
  for (const auto& [hash, block] : blocks) {
    HERD_CHECK_MSG(kv.pool().is_cached(block) && kv.pool().hash(block) == hash, "block %d does not hold hash %016llx",
                   block, static_cast<unsigned long long>(hash));
    if (seen.insert(hash).second) unique.emplace_back(hash, block);
  }
  std::vector<uint8_t> head(kMagic, kMagic + sizeof(kMagic));
  PutLe(head, kVersion, 4);
  PutLe(head, static_cast<uint64_t>(kv.block_size()), 4);
  PutLe(head, kv.root_hash(), 8);
  PutLe(head, cache.BlockBytes(), 8);
  PutLe(head, unique.size(), 8);
  HERD_CHECK_MSG(kv.cache_key().size() <= kMaxKeyBytes, "cache key of %zu bytes", kv.cache_key().size());
  PutLe(head, kv.cache_key().size(), 4);
  head.insert(head.end(), kv.cache_key().begin(), kv.cache_key().end());
  PutLe(head, Checksum(head.data(), head.size()), 8);

  const std::string tmp = path + ".tmp";
  Fd out{::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)};
  if (out.fd < 0) return IoError(Errno(tmp, "open"));
  Status st = WriteAll(out.fd, head.data(), head.size(), tmp);
  std::vector<uint8_t> bytes(cache.BlockBytes());
  for (size_t i = 0; st.ok() && i < unique.size(); ++i) {
    cache.ReadBlock(unique[i].second, bytes.data());
    std::vector<uint8_t> record_head;
    PutLe(record_head, unique[i].first, 8);
    PutLe(record_head, Checksum(bytes.data(), bytes.size()), 8);
    st = WriteAll(out.fd, record_head.data(), record_head.size(), tmp);
    if (st.ok()) st = WriteAll(out.fd, bytes.data(), bytes.size(), tmp);
  }
  if (st.ok() && ::fsync(out.fd) != 0) st = IoError(Errno(tmp, "fsync"));
  const int fd = out.fd;
  out.fd = -1;
  if (::close(fd) != 0 && st.ok()) st = IoError(Errno(tmp, "close"));
  if (st.ok() && ::rename(tmp.c_str(), path.c_str()) != 0) st = IoError(Errno(path, "rename"));
  if (!st.ok()) ::unlink(tmp.c_str());
  return st;
}

Result<int32_t> LoadPrefixCache(const std::string& path, KvCacheManager& kv, KvCache& cache) {
  HERD_CHECK(cache.config().block_size == kv.block_size() && cache.config().n_blocks == kv.pool().n_blocks());
  if (!kv.prefix_caching()) return InvalidArgument("prefix cache file " + path + ": prefix caching is off");
  Fd in{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (in.fd < 0) {
    const int err = errno;
    const std::string msg = Errno(path, "open");
    return err == ENOENT ? NotFound(msg) : IoError(msg);
  }
  struct stat st;
  if (::fstat(in.fd, &st) != 0) return IoError(Errno(path, "fstat"));
  if (!S_ISREG(st.st_mode)) return IoError(path + ": not a regular file");
  HERD_ASSIGN_OR_RETURN(const Header h, ReadHeader(in.fd, static_cast<uint64_t>(st.st_size), path, kv, cache));

  const uint64_t record = kRecordHeader + h.block_bytes;
  std::vector<uint8_t> buf(static_cast<size_t>(record));
  // Reads record i into buf and checks it; returns its hash.
  auto read_record = [&](uint64_t i) -> Result<BlockHash> {
    HERD_RETURN_IF_ERROR(ReadAt(in.fd, buf.data(), buf.size(), h.size + i * record, path));
    if (Checksum(buf.data() + kRecordHeader, h.block_bytes) != GetLe(buf.data() + 8, 8)) {
      return Corrupt(path, StrFormat("block %llu of %llu is corrupt (checksum mismatch)",
                                     static_cast<unsigned long long>(i), static_cast<unsigned long long>(h.count)));
    }
    return GetLe(buf.data(), 8);
  };

  // Pass 1: every record is intact and no hash repeats (a writer never repeats one).
  std::unordered_set<BlockHash> seen;
  for (uint64_t i = 0; i < h.count; ++i) {
    HERD_ASSIGN_OR_RETURN(const BlockHash hash, read_record(i));
    if (!seen.insert(hash).second) {
      return Corrupt(path,
                     StrFormat("block %llu repeats the hash of an earlier block", static_cast<unsigned long long>(i)));
    }
  }

  // Pass 2: load into empty blocks, holding them until the end so that they can be released
  // children first.
  BlockPool& pool = kv.mutable_pool();
  std::vector<int32_t> loaded;
  Status result = Status::Ok();
  for (uint64_t i = 0; i < h.count; ++i) {
    auto hash = read_record(i);
    if (!hash.ok()) {
      result = hash.status();
      break;
    }
    if (pool.Lookup(*hash) >= 0) continue;  // cached already
    const auto block = pool.AllocateEmpty();
    if (!block.has_value()) break;  // the pool is full: keep the chains' first blocks
    cache.WriteBlock(*block, buf.data() + kRecordHeader);
    HERD_CHECK(pool.Register(*block, *hash));
    loaded.push_back(*block);
  }
  for (auto b = loaded.rbegin(); b != loaded.rend(); ++b) pool.Release(*b);
  if (!result.ok()) return result;
  return static_cast<int32_t>(loaded.size());
}

}  // namespace herd
