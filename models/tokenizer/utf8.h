// UTF-8 helpers for the tokenizer: validation, code point iteration and the lossy conversion
// that Hugging Face's decoders apply (each maximal invalid subsequence becomes one U+FFFD).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace allot::models {

// Byte offset of the first invalid UTF-8 sequence in `s`, or npos when it is all valid.
size_t FindInvalidUtf8(std::string_view s);

// Decodes the code point at s[*pos] (which must be valid UTF-8) and advances *pos past it.
char32_t NextCodePoint(std::string_view s, size_t* pos);

// Appends the UTF-8 encoding of `cp` to `out`.
void AppendUtf8(char32_t cp, std::string* out);

// Replaces every maximal invalid subsequence with U+FFFD (WHATWG / Unicode "best practice",
// the behaviour of Rust's from_utf8_lossy and JS TextDecoder).
std::string ToValidUtf8(std::string_view bytes);

}  // namespace allot::models
