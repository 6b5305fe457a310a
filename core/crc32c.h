// CRC-32C (Castagnoli), as used by TFRecord framing, plus TensorFlow's masking.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace allot {

uint32_t Crc32c(const void* data, size_t n, uint32_t crc = 0);
inline uint32_t Crc32c(std::string_view s) { return Crc32c(s.data(), s.size()); }

// TFRecord stores masked CRCs so that a CRC of data containing CRCs stays well distributed.
inline uint32_t MaskCrc(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }
inline uint32_t UnmaskCrc(uint32_t masked) {
  uint32_t rot = masked - 0xa282ead8u;
  return (rot >> 17) | (rot << 15);
}

}  // namespace allot
