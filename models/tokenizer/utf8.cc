#include "models/tokenizer/utf8.h"

#include <cstdint>

namespace allot::models {
namespace {

// Length of a well-formed sequence starting at s[i], or 0 when it is ill-formed there.
// The second-byte ranges follow Unicode Table 3-7.
size_t WellFormedLength(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<uint8_t>(s[k]); };
  const uint8_t c = b(i);
  if (c < 0x80) return 1;
  size_t need;
  uint8_t lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) {
    need = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    need = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    need = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (i + need > s.size()) return 0;
  if (b(i + 1) < lo || b(i + 1) > hi) return 0;
  for (size_t k = 2; k < need; ++k) {
    if (b(i + k) < 0x80 || b(i + k) > 0xBF) return 0;
  }
  return need;
}

// How many bytes of the ill-formed sequence at s[i] form its maximal subpart (at least 1).
size_t MaximalSubpart(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<uint8_t>(s[k]); };
  const uint8_t c = b(i);
  size_t need;
  uint8_t lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) {
    need = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    need = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    need = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 1;
  }
  size_t n = 1;
  while (n < need && i + n < s.size()) {
    const uint8_t x = b(i + n);
    const uint8_t l = n == 1 ? lo : 0x80;
    const uint8_t h = n == 1 ? hi : 0xBF;
    if (x < l || x > h) break;
    ++n;
  }
  return n;
}

}  // namespace

size_t FindInvalidUtf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    if (static_cast<uint8_t>(s[i]) < 0x80) {
      ++i;
      continue;
    }
    const size_t n = WellFormedLength(s, i);
    if (n == 0) return i;
    i += n;
  }
  return std::string_view::npos;
}

char32_t NextCodePoint(std::string_view s, size_t* pos) {
  const auto b = [&](size_t k) { return static_cast<uint8_t>(s[k]); };
  size_t i = *pos;
  const uint8_t c = b(i);
  if (c < 0x80) {
    *pos = i + 1;
    return c;
  }
  if (c < 0xE0) {
    *pos = i + 2;
    return (char32_t(c & 0x1F) << 6) | (b(i + 1) & 0x3F);
  }
  if (c < 0xF0) {
    *pos = i + 3;
    return (char32_t(c & 0x0F) << 12) | (char32_t(b(i + 1) & 0x3F) << 6) | (b(i + 2) & 0x3F);
  }
  *pos = i + 4;
  return (char32_t(c & 0x07) << 18) | (char32_t(b(i + 1) & 0x3F) << 12) |
         (char32_t(b(i + 2) & 0x3F) << 6) | (b(i + 3) & 0x3F);
}

void AppendUtf8(char32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

std::string ToValidUtf8(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  size_t i = 0;
  while (i < bytes.size()) {
    if (static_cast<uint8_t>(bytes[i]) < 0x80) {
      out.push_back(bytes[i++]);
      continue;
    }
    const size_t n = WellFormedLength(bytes, i);
    if (n > 0) {
      out.append(bytes.substr(i, n));
      i += n;
    } else {
      out.append("\xEF\xBF\xBD");  // U+FFFD
      i += MaximalSubpart(bytes, i);
    }
  }
  return out;
}

}  // namespace allot::models
