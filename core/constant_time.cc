#include "core/constant_time.h"

namespace allot {

bool ConstantTimeEquals(std::string_view presented, std::string_view secret) {
  // Accumulate every difference over the whole secret; no early exit, no branch on the data.
  volatile unsigned char diff = presented.size() == secret.size() ? 0 : 1;
  for (size_t i = 0; i < secret.size(); ++i) {
    const unsigned char p = i < presented.size() ? static_cast<unsigned char>(presented[i]) : 0;
    diff = diff | static_cast<unsigned char>(p ^ static_cast<unsigned char>(secret[i]));
  }
  return diff == 0;
}

}  // namespace allot
