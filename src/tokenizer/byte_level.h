// GPT-2's byte-level alphabet: every byte maps to one printable code point, so byte-level BPE
// vocabularies store tokens as text. Bytes 0x21-0x7E, 0xA1-0xAC and 0xAE-0xFF map to
// themselves; the other 68 bytes map to U+0100.. in byte order (space 0x20 -> U+0120 'Ġ').
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace herd::byte_level {

uint32_t ByteToCodePoint(uint8_t b);
// The byte a code point stands for, or -1 if it is not in the alphabet.
int CodePointToByte(uint32_t cp);

// Raw bytes -> their byte-level text (UTF-8).
std::string Encode(std::string_view bytes);
// Byte-level text -> raw bytes. Characters outside the alphabet are copied as their UTF-8 and
// make the result false.
bool Decode(std::string_view text, std::string* bytes);

}  // namespace herd::byte_level
