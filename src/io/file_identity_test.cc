#include "io/file_identity.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <random>
#include <vector>

namespace herd {
namespace {

std::vector<uint8_t> RandomBytes(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> b(n);
  for (auto& x : b) x = static_cast<uint8_t>(rng());
  return b;
}

std::string TempPath(const std::string& name) {
  const char* dir = std::getenv("TMPDIR");
  return std::string(dir != nullptr ? dir : "/tmp") + "/herd-file-id-" + std::to_string(getpid()) + "-" + name;
}

void WriteFile(const std::string& path, const std::vector<uint8_t>& bytes) {
  FILE* f = std::fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(std::fwrite(bytes.data(), 1, bytes.size(), f), bytes.size());
  std::fclose(f);
}

// A sparse file of `size` bytes (zeros) with `byte` written at each offset in `pokes`.
void WriteSparse(const std::string& path, uint64_t size, const std::vector<uint64_t>& pokes, uint8_t byte = 7) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::ftruncate(fd, static_cast<off_t>(size)), 0);
  for (uint64_t off : pokes) ASSERT_EQ(::pwrite(fd, &byte, 1, static_cast<off_t>(off)), 1);
  ::close(fd);
}

TEST(FileIdentityTest, IdenticalCopiesAreEqualAndTheFormIsSizeDashHash) {
  const auto bytes = RandomBytes(3 << 20, 1);
  const auto copy = bytes;
  const std::string id = FileIdentity(bytes);
  EXPECT_EQ(id, FileIdentity(copy));
  EXPECT_EQ(id.rfind(std::to_string(bytes.size()) + "-", 0), 0u) << id;
  EXPECT_EQ(id.size(), std::to_string(bytes.size()).size() + 1 + 16);
}

TEST(FileIdentityTest, OneChangedByteInTheHeadOrTailChangesIt) {
  const auto bytes = RandomBytes(3 << 20, 2);
  const std::string id = FileIdentity(bytes);
  for (size_t off : {size_t{0}, size_t{100}, (size_t{1} << 20) - 1, bytes.size() - (1 << 20), bytes.size() - 1}) {
    auto changed = bytes;
    changed[off] ^= 1;
    EXPECT_NE(FileIdentity(changed), id) << "byte " << off;
  }
  // The middle of a 3 MiB file is not sampled (no 64 MiB page inside it).
  auto middle = bytes;
  middle[(3 << 20) / 2] ^= 1;
  EXPECT_EQ(FileIdentity(middle), id);
}

TEST(FileIdentityTest, DifferentSizesDiffer) {
  const auto bytes = RandomBytes(5000, 3);
  const std::vector<uint8_t> shorter(bytes.begin(), bytes.end() - 1);
  auto longer = bytes;
  longer.push_back(0);
  EXPECT_NE(FileIdentity(bytes), FileIdentity(shorter));
  EXPECT_NE(FileIdentity(bytes), FileIdentity(longer));
  EXPECT_NE(FileIdentity(std::vector<uint8_t>{}), FileIdentity(std::vector<uint8_t>{0}));
  // Small files (head and tail overlap) still see every byte.
  for (size_t off = 0; off < bytes.size(); off += 997) {
    auto changed = bytes;
    changed[off] ^= 0x80;
    EXPECT_NE(FileIdentity(changed), FileIdentity(bytes)) << off;
  }
}

TEST(FileIdentityTest, PathMappedAndInMemoryAgree) {
  const auto bytes = RandomBytes((2 << 20) + 12345, 4);
  const std::string path = TempPath("agree");
  WriteFile(path, bytes);
  auto at = FileIdentityAt(path);
  ASSERT_TRUE(at.ok()) << at.status().ToString();
  EXPECT_EQ(*at, FileIdentity(bytes));
  auto mapped = MappedFile::Open(path);
  ASSERT_TRUE(mapped.ok());
  EXPECT_EQ(FileIdentity(*mapped), *at);
  std::remove(path.c_str());
  EXPECT_EQ(FileIdentityAt(path).status().code(), StatusCode::kNotFound);
}

// Large files through sparse files on disk (no memory): the 4 KiB page at 128 MiB is sampled,
// a byte at 100 MiB is not.
TEST(FileIdentityTest, SampledPagesOfLargeFilesCount) {
  const uint64_t size = (uint64_t{200} << 20) + 3;
  const std::string a = TempPath("a"), b = TempPath("b");
  WriteSparse(a, size, {});
  WriteSparse(b, size, {});
  const std::string base = *FileIdentityAt(a);
  EXPECT_EQ(*FileIdentityAt(b), base);
  WriteSparse(b, size, {(uint64_t{128} << 20) + 4095});
  EXPECT_NE(*FileIdentityAt(b), base);
  WriteSparse(b, size, {uint64_t{64} << 20});
  EXPECT_NE(*FileIdentityAt(b), base);
  WriteSparse(b, size, {10});
  EXPECT_NE(*FileIdentityAt(b), base);
  WriteSparse(b, size, {size - 1});
  EXPECT_NE(*FileIdentityAt(b), base);
  WriteSparse(b, size, {uint64_t{100} << 20});
  EXPECT_EQ(*FileIdentityAt(b), base);
  WriteSparse(b, size, {(uint64_t{128} << 20) + 4096});  // just past the sampled page
  EXPECT_EQ(*FileIdentityAt(b), base);
  WriteSparse(b, size + 1, {});
  EXPECT_NE(*FileIdentityAt(b), base);
  std::remove(a.c_str());
  std::remove(b.c_str());
}

TEST(FileIdentityTest, InMemoryLargeBufferSamplesThePageAt64MiBLikeTheFile) {
  const uint64_t size = (uint64_t{64} << 20) + 8192;
  std::vector<uint8_t> bytes(size, 0);
  const std::string base = FileIdentity(bytes);
  bytes[uint64_t{64} << 20] = 7;
  const std::string poked = FileIdentity(bytes);
  EXPECT_NE(poked, base);
  const std::string path = TempPath("large");
  WriteSparse(path, size, {uint64_t{64} << 20});
  EXPECT_EQ(*FileIdentityAt(path), poked);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace herd
