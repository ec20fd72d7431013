// Identity of a model file, for cache keys (prefix-cache hashes and persisted prefix caches are
// only valid for the file they were computed with).
//
// The identity is "<size in bytes>-<16 hex digits>": the size and a 64-bit hash of a sample of
// the contents — the first and the last 1 MiB and one 4 KiB page at every multiple of 64 MiB —
// so a multi-GB file costs ~2.3 MiB of reads (a 4.9 GB file: 2 MiB + 73 pages). Two files with
// different sizes, or that differ anywhere in a sampled region, get different identities; a
// change outside the sample is not seen (GGUF files differ in their metadata header when their
// weights differ, and re-quantizations change the size or most pages).
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "base/status.h"
#include "io/mmap_file.h"

namespace herd {

// Sampled regions (see above) of bytes in memory. Touches only the sampled pages.
std::string FileIdentity(std::span<const uint8_t> bytes);
std::string FileIdentity(const MappedFile& file);

// The same identity of the file at `path`, read with pread (no mapping, no read-ahead of the
// whole file). Errors: NotFound, IoError (with the path).
Result<std::string> FileIdentityAt(const std::string& path);

}  // namespace herd
