// GPT-2's reversible map between bytes and printable code points.
//
// Byte-level BPE vocabularies (GPT-2, Qwen, Llama 3) spell every token as a string of these
// 256 code points, so that a space is 'Ġ' (U+0120) and a newline 'Ċ' (U+010A). Bytes that are
// printable Latin-1 map to themselves; the other 68 map to U+0100 onwards, in byte order.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace allot::models {

// The code point that spells byte `b`.
char32_t ByteToCodePoint(unsigned char b);

// The byte that code point `cp` spells, or -1 when `cp` is outside the map.
int CodePointToByte(char32_t cp);

// Raw bytes -> the vocabulary's spelling (UTF-8 of the mapped code points).
std::string BytesToTokenSpelling(std::string_view bytes);

// The vocabulary's spelling -> raw bytes; nullopt when a code point is outside the map or the
// spelling is not valid UTF-8.
std::optional<std::string> TokenSpellingToBytes(std::string_view spelling);

}  // namespace allot::models
