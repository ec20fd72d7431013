#include "kv/prefix_store.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <numeric>
#include <random>

namespace herd {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string TempPath(const std::string& name) {
  const char* dir = std::getenv("TMPDIR");
  return std::string(dir != nullptr ? dir : "/tmp") + "/herd-prefix-store-" + std::to_string(getpid()) + "-" + name;
}

std::vector<uint8_t> ReadBytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
}

void WriteBytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

std::vector<int32_t> Tokens(int n, int start) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  std::iota(t.begin(), t.end(), start);
  return t;
}

// One model instance's KV: a manager and a cache of `n_blocks` blocks of 4 tokens.
struct Kv {
  std::unique_ptr<Backend> backend = MakeReferenceBackend();
  std::unique_ptr<KvCacheManager> kv;
  std::unique_ptr<KvCache> cache;

  explicit Kv(int32_t n_blocks, DType type = DType::kF16, const std::string& key = "model-a|f16|4",
              int32_t block_size = 4) {
    KvCacheManagerOptions o;
    o.n_blocks = n_blocks;
    o.block_size = block_size;
    o.cache_key = key;
    kv = std::make_unique<KvCacheManager>(o);
    KvCacheConfig c{2, 2, 32, block_size, n_blocks, type};
    cache = std::move(KvCache::Create(backend.get(), c)).value();
  }

  // Computes `tokens` as sequence `id` (random K/V bytes) and frees it: its full blocks stay
  // cached. Returns the chain.
  std::vector<std::pair<BlockHash, int32_t>> Fill(SeqId id, const std::vector<int32_t>& tokens, unsigned seed) {
    const int32_t cached = kv->Admit(id, tokens);
    EXPECT_TRUE(kv->Reserve(id, cached, static_cast<int32_t>(tokens.size())));
    std::mt19937 rng(seed);
    std::vector<uint8_t> bytes(cache->BlockBytes());
    const auto table = kv->BlockTable(id);
    for (size_t k = static_cast<size_t>(cached / kv->block_size()); k < table.size(); ++k) {
      for (auto& x : bytes) x = static_cast<uint8_t>(rng());
      cache->WriteBlock(table[k], bytes.data());
    }
    kv->Commit(id, tokens, static_cast<int32_t>(tokens.size()));
    kv->Free(id);
    return kv->CachedChain(tokens);
  }

  std::vector<uint8_t> Block(int32_t b) const {
    std::vector<uint8_t> bytes(cache->BlockBytes());
    cache->ReadBlock(b, bytes.data());
    return bytes;
  }
};

TEST(PrefixStoreTest, RoundTripRestoresExactHashesAndBytesAsEvictableCachedBlocks) {
  for (DType type : {DType::kF16, DType::kQ8_0}) {
    SCOPED_TRACE(DTypeName(type));
    Kv a(16, type);
    const auto t1 = Tokens(14, 0);                     // blocks of [0,4) [4,8) [8,12) + 2 tokens
    auto t2 = Tokens(8, 0);                            // shares t1's first two blocks
    for (int32_t x : Tokens(4, 500)) t2.push_back(x);  // + one block of its own
    const auto c1 = a.Fill(1, t1, 1);
    const auto c2 = a.Fill(2, t2, 2);
    ASSERT_EQ(c1.size(), 3u);
    ASSERT_EQ(c2.size(), 3u);
    std::vector<std::pair<BlockHash, int32_t>> blocks = c1;
    blocks.insert(blocks.end(), c2.begin(), c2.end());  // c2's first two repeat c1's: written once
    const std::string path = TempPath("roundtrip");
    ASSERT_TRUE(SavePrefixCache(path, *a.kv, *a.cache, blocks).ok());
    EXPECT_EQ(ReadBytes(path + ".tmp").size(), 0u);  // renamed away

    Kv b(8, type);
    auto loaded = LoadPrefixCache(path, *b.kv, *b.cache);
    ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
    EXPECT_EQ(*loaded, 4);
    const auto d1 = b.kv->CachedChain(t1), d2 = b.kv->CachedChain(t2);
    ASSERT_EQ(d1.size(), 3u);
    ASSERT_EQ(d2.size(), 3u);
    // Loaded into blocks 0..3 in file order; all free (cached, ref 0), released children first.
    EXPECT_THAT(b.kv->pool().FreeQueue(), ElementsAre(4, 5, 6, 7, 3, 2, 1, 0));
    for (size_t i = 0; i < 3; ++i) {
      EXPECT_EQ(d1[i].first, c1[i].first);
      EXPECT_EQ(d2[i].first, c2[i].first);
      EXPECT_EQ(b.Block(d1[i].second), a.Block(c1[i].second)) << "block " << i;
      EXPECT_EQ(b.Block(d2[i].second), a.Block(c2[i].second)) << "block " << i;
      EXPECT_EQ(b.kv->pool().ref_count(d1[i].second), 0);
    }
    EXPECT_EQ(b.kv->CachedPrefixLength(t1), 12);
    b.kv->CheckInvariants();
    // Loading again finds everything cached.
    EXPECT_EQ(*LoadPrefixCache(path, *b.kv, *b.cache), 0);
    std::remove(path.c_str());
  }
}

TEST(PrefixStoreTest, AFileOfAnotherModelKvTypeOrBlockSizeIsAClearError) {
  Kv a(8);
  const auto chain = a.Fill(1, Tokens(8, 0), 1);
  const std::string path = TempPath("root");
  ASSERT_TRUE(SavePrefixCache(path, *a.kv, *a.cache, chain).ok());
  {
    Kv other(8, DType::kF16, "model-b|f16|4");
    auto r = LoadPrefixCache(path, *other.kv, *other.cache);
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(r.status().message(), HasSubstr(path));
    EXPECT_THAT(r.status().message(), HasSubstr("'model-a|f16|4'"));
    EXPECT_THAT(r.status().message(), HasSubstr("'model-b|f16|4'"));
    EXPECT_EQ(other.kv->pool().cached_count(), 0);
  }
  {
    Kv other(8, DType::kQ8_0, "model-a|q8_0|4");
    EXPECT_THAT(LoadPrefixCache(path, *other.kv, *other.cache).status().message(), HasSubstr("another model"));
  }
  {
    Kv other(8, DType::kF16, "model-a|f16|8", 8);
    EXPECT_THAT(LoadPrefixCache(path, *other.kv, *other.cache).status().message(), HasSubstr("another model"));
  }
  {
    // Same key, other geometry (a caller whose key does not cover the KV type): still refused.
    Kv other(8, DType::kQ8_0, "model-a|f16|4");
    auto r = LoadPrefixCache(path, *other.kv, *other.cache);
    EXPECT_THAT(r.status().message(), HasSubstr("bytes; this cache's are 4 tokens and"));
    EXPECT_EQ(other.kv->pool().cached_count(), 0);
  }
  {
    KvCacheManagerOptions o;
    o.n_blocks = 8;
    o.block_size = 4;
    o.cache_key = "model-a|f16|4";
    o.prefix_caching = false;
    KvCacheManager off(o);
    EXPECT_THAT(LoadPrefixCache(path, off, *a.cache).status().message(), HasSubstr("prefix caching is off"));
  }
  EXPECT_EQ(LoadPrefixCache(path + ".missing", *a.kv, *a.cache).status().code(), StatusCode::kNotFound);
  std::remove(path.c_str());
}

TEST(PrefixStoreTest, TruncatedAtAnyOffsetIsAnErrorAndLoadsNothing) {
  Kv a(8);
  const auto chain = a.Fill(1, Tokens(12, 0), 1);
  const std::string path = TempPath("trunc"), cut = TempPath("trunc-cut");
  ASSERT_TRUE(SavePrefixCache(path, *a.kv, *a.cache, chain).ok());
  const auto bytes = ReadBytes(path);
  ASSERT_EQ(bytes.size(), 44 + 13 + 8 + 3 * (16 + a.cache->BlockBytes()));
  Kv b(8);
  for (size_t n = 0; n < bytes.size(); n += (n < 200 ? 1 : 61)) {
    WriteBytes(cut, std::vector<uint8_t>(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(n)));
    auto r = LoadPrefixCache(cut, *b.kv, *b.cache);
    ASSERT_FALSE(r.ok()) << n;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << n;
    EXPECT_THAT(r.status().message(), HasSubstr(cut)) << n;
    EXPECT_THAT(r.status().message(), HasSubstr("truncated")) << n;
  }
  auto longer = bytes;
  longer.push_back(0);
  WriteBytes(cut, longer);
  EXPECT_THAT(LoadPrefixCache(cut, *b.kv, *b.cache).status().message(), HasSubstr("1 unexpected bytes after block 3"));
  EXPECT_EQ(b.kv->pool().cached_count(), 0);
  EXPECT_THAT(b.kv->pool().FreeQueue(), ElementsAre(0, 1, 2, 3, 4, 5, 6, 7));
  std::remove(path.c_str());
  std::remove(cut.c_str());
}

TEST(PrefixStoreTest, AnyCorruptHeaderByteOrBlockByteIsAnErrorAndLoadsNothing) {
  Kv a(8);
  const auto chain = a.Fill(1, Tokens(12, 0), 1);
  const std::string path = TempPath("corrupt"), bad = TempPath("corrupt-bad");
  ASSERT_TRUE(SavePrefixCache(path, *a.kv, *a.cache, chain).ok());
  const auto bytes = ReadBytes(path);
  const size_t header = 44 + 13 + 8;
  Kv b(8);
  for (size_t i = 0; i < header; ++i) {
    auto changed = bytes;
    changed[i] ^= 0x10;
    WriteBytes(bad, changed);
    auto r = LoadPrefixCache(bad, *b.kv, *b.cache);
    ASSERT_FALSE(r.ok()) << "byte " << i;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << i;
    EXPECT_THAT(r.status().message(), HasSubstr(bad)) << i;
  }
  {
    auto changed = bytes;
    changed[8] = 9;  // version 9
    WriteBytes(bad, changed);
    EXPECT_THAT(LoadPrefixCache(bad, *b.kv, *b.cache).status().message(), HasSubstr("format version 9"));
    changed = bytes;
    changed[50] ^= 1;  // inside the cache key
    WriteBytes(bad, changed);
    EXPECT_THAT(LoadPrefixCache(bad, *b.kv, *b.cache).status().message(), HasSubstr("corrupt header"));
  }
  const size_t record = 16 + a.cache->BlockBytes();
  for (size_t off : {header + record + 16, header + 2 * record + 16 + 100, header + 2 * record + 8}) {
    auto changed = bytes;
    changed[off] ^= 0x01;
    WriteBytes(bad, changed);
    auto r = LoadPrefixCache(bad, *b.kv, *b.cache);
    EXPECT_THAT(r.status().message(),
                HasSubstr(off < header + 2 * record ? "block 1 of 3 is corrupt" : "block 2 of 3"));
  }
  {
    // A record whose hash repeats an earlier one (a writer never does this).
    auto changed = bytes;
    std::copy(bytes.begin() + static_cast<std::ptrdiff_t>(header),
              bytes.begin() + static_cast<std::ptrdiff_t>(header + record),
              changed.begin() + static_cast<std::ptrdiff_t>(header + record));
    WriteBytes(bad, changed);
    EXPECT_THAT(LoadPrefixCache(bad, *b.kv, *b.cache).status().message(), HasSubstr("block 1 repeats"));
  }
  EXPECT_EQ(b.kv->pool().cached_count(), 0);
  b.kv->CheckInvariants();
  std::remove(path.c_str());
  std::remove(bad.c_str());
}

TEST(PrefixStoreTest, ASmallPoolLoadsTheFirstBlocksOfTheChainAndNeverEvictsOrTouchesBlocksInUse) {
  Kv a(16);
  const auto tokens = Tokens(24, 0);  // 6 blocks
  const auto chain = a.Fill(1, tokens, 1);
  ASSERT_EQ(chain.size(), 6u);
  const std::string path = TempPath("small");
  ASSERT_TRUE(SavePrefixCache(path, *a.kv, *a.cache, chain).ok());

  Kv b(6);
  // Block 0: a sequence in use; block 1: cached content of another prompt.
  const auto other = b.Fill(7, Tokens(4, 900), 3);
  ASSERT_EQ(other.size(), 1u);
  const auto in_use_tokens = Tokens(3, 800);
  b.kv->Admit(8, in_use_tokens);
  ASSERT_TRUE(b.kv->Reserve(8, 0, 3));
  const int32_t in_use = b.kv->BlockTable(8)[0];
  const auto in_use_bytes = b.Block(in_use);
  const auto other_bytes = b.Block(other[0].second);

  auto loaded = LoadPrefixCache(path, *b.kv, *b.cache);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_EQ(*loaded, 4);  // 6 blocks - 1 in use - 1 cached
  const auto got = b.kv->CachedChain(tokens);
  ASSERT_EQ(got.size(), 4u);
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].first, chain[i].first);
    EXPECT_EQ(b.Block(got[i].second), a.Block(chain[i].second));
  }
  EXPECT_EQ(b.kv->CachedChain(Tokens(4, 900)), other);  // not evicted
  EXPECT_EQ(b.Block(other[0].second), other_bytes);
  EXPECT_EQ(b.Block(in_use), in_use_bytes);
  EXPECT_EQ(b.kv->pool().ref_count(in_use), 1);
  b.kv->CheckInvariants();
  std::remove(path.c_str());
}

TEST(PrefixStoreTest, SavingToAnUnwritablePlaceIsAnIoError) {
  Kv a(4);
  const auto chain = a.Fill(1, Tokens(4, 0), 1);
  auto st = SavePrefixCache("/nonexistent-dir/x.kvc", *a.kv, *a.cache, chain);
  EXPECT_EQ(st.code(), StatusCode::kIo);
  EXPECT_THAT(st.message(), HasSubstr("/nonexistent-dir/x.kvc.tmp"));
}

}  // namespace
}  // namespace herd
