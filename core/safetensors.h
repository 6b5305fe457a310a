// safetensors: the weight format of Hugging Face checkpoints and PEFT adapters.
//
// Format: an 8-byte little-endian header length N, N bytes of JSON
//   {"name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}, ...,
//    "__metadata__": {"key": "value"}}
// then the data buffer; offsets are relative to the start of the buffer.
//
// The reader maps the file read-only and validates everything before handing out a byte: the
// header length, the JSON, dtypes, shapes, byte sizes, and that the tensors tile the buffer
// without overlap or holes. A malformed file gets a Status naming the file and the tensor; it
// never causes an out-of-bounds read.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"

namespace allot::safetensors {

enum class Dtype {
  kBool,
  kU8,
  kI8,
  kI16,
  kU16,
  kI32,
  kU32,
  kI64,
  kU64,
  kF16,
  kBF16,
  kF32,
  kF64,
  kF8E4M3,
  kF8E5M2,
};

const char* DtypeName(Dtype dtype);           // "F32"
Result<Dtype> ParseDtype(const std::string& name);
size_t DtypeSize(Dtype dtype);                // bytes per element
std::vector<Dtype> AllDtypes();

struct TensorInfo {
  std::string name;
  Dtype dtype = Dtype::kF32;
  std::vector<int64_t> shape;
  uint64_t begin = 0;  // offsets into the data buffer
  uint64_t end = 0;
  int64_t numel() const;
  uint64_t nbytes() const { return end - begin; }
};

// Limits that keep a hostile header from costing memory or time.
inline constexpr uint64_t kMaxHeaderBytes = 100ull << 20;
inline constexpr size_t kMaxRank = 16;

// A parsed view over bytes owned elsewhere (an mmap or a buffer).
class View {
 public:
  // Validates a whole safetensors image. `source` names it in errors (usually the path).
  static Result<View> Parse(std::span<const std::byte> bytes, const std::string& source);

  const std::vector<TensorInfo>& tensors() const { return tensors_; }  // in offset order
  const TensorInfo* Find(const std::string& name) const;
  std::span<const std::byte> Data(const TensorInfo& info) const;
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

 private:
  std::span<const std::byte> data_;
  std::vector<TensorInfo> tensors_;
  std::map<std::string, size_t> index_;
  std::map<std::string, std::string> metadata_;
};

// A safetensors file mapped read-only; tensors are views into the mapping.
class File {
 public:
  static Result<std::unique_ptr<File>> Open(const std::string& path);
  ~File();
  File(const File&) = delete;
  File& operator=(const File&) = delete;

  const std::string& path() const { return path_; }
  const View& view() const { return view_; }
  const std::vector<TensorInfo>& tensors() const { return view_.tensors(); }
  const TensorInfo* Find(const std::string& name) const { return view_.Find(name); }
  std::span<const std::byte> Data(const TensorInfo& info) const { return view_.Data(info); }
  const std::map<std::string, std::string>& metadata() const { return view_.metadata(); }

 private:
  File() = default;
  std::string path_;
  void* map_ = nullptr;
  size_t size_ = 0;
  View view_;
};

// A tensor to write: the bytes are borrowed until Write returns.
struct TensorRef {
  std::string name;
  Dtype dtype = Dtype::kF32;
  std::vector<int64_t> shape;
  std::span<const std::byte> data;
};

// Serialises to bytes (header padded with spaces to an 8-byte boundary, as the reference
// implementation does). Names must be unique and sizes must match shapes.
Result<std::string> Serialize(const std::vector<TensorRef>& tensors,
                              const std::map<std::string, std::string>& metadata = {});

// Writes a file atomically (temporary file, fsync, rename).
Status Write(const std::string& path, const std::vector<TensorRef>& tensors,
             const std::map<std::string, std::string>& metadata = {});

// A checkpoint that is one model.safetensors or several shards listed in
// model.safetensors.index.json ({"metadata": {...}, "weight_map": {"name": "shard file"}}).
class ShardedCheckpoint {
 public:
  // `dir` holds model.safetensors or model.safetensors.index.json (also adapter_model.*).
  static Result<ShardedCheckpoint> Open(const std::string& dir,
                                        const std::string& stem = "model");

  std::vector<std::string> names() const;
  // The file and info for a tensor, or nullptr.
  const TensorInfo* Find(const std::string& name, const File** file) const;

 private:
  std::vector<std::shared_ptr<File>> files_;
  std::map<std::string, std::pair<size_t, const TensorInfo*>> where_;
};

}  // namespace allot::safetensors
