#include "models/tokenizer/byte_level.h"

#include <array>

#include "models/tokenizer/utf8.h"

namespace allot::models {
namespace {

struct Tables {
  std::array<char32_t, 256> to_cp{};
  std::array<int, 324> to_byte{};  // every image lies below U+0144

  Tables() {
    to_byte.fill(-1);
    int next = 0;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174);
      to_cp[b] = printable ? char32_t(b) : char32_t(256 + next++);
      to_byte[to_cp[b]] = b;
    }
  }
};

const Tables& GetTables() {
  static const Tables tables;
  return tables;
}

}  // namespace

char32_t ByteToCodePoint(unsigned char b) { return GetTables().to_cp[b]; }

int CodePointToByte(char32_t cp) {
  const auto& t = GetTables().to_byte;
  return cp < t.size() ? t[cp] : -1;
}

std::string BytesToTokenSpelling(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char b : bytes) AppendUtf8(ByteToCodePoint(b), &out);
  return out;
}

std::optional<std::string> TokenSpellingToBytes(std::string_view spelling) {
  if (FindInvalidUtf8(spelling) != std::string_view::npos) return std::nullopt;
  std::string out;
  out.reserve(spelling.size());
  size_t pos = 0;
  while (pos < spelling.size()) {
    const int b = CodePointToByte(NextCodePoint(spelling, &pos));
    if (b < 0) return std::nullopt;
    out.push_back(static_cast<char>(b));
  }
  return out;
}

}  // namespace allot::models
