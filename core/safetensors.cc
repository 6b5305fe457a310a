#include "core/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/atomic_file.h"

namespace allot::safetensors {
namespace {

using nlohmann::json;

struct DtypeEntry {
  Dtype dtype;
  const char* name;
  size_t size;
};

constexpr DtypeEntry kDtypes[] = {
    {Dtype::kBool, "BOOL", 1}, {Dtype::kU8, "U8", 1},         {Dtype::kI8, "I8", 1},
    {Dtype::kI16, "I16", 2},   {Dtype::kU16, "U16", 2},       {Dtype::kI32, "I32", 4},
    {Dtype::kU32, "U32", 4},   {Dtype::kI64, "I64", 8},       {Dtype::kU64, "U64", 8},
    {Dtype::kF16, "F16", 2},   {Dtype::kBF16, "BF16", 2},     {Dtype::kF32, "F32", 4},
    {Dtype::kF64, "F64", 8},   {Dtype::kF8E4M3, "F8_E4M3", 1}, {Dtype::kF8E5M2, "F8_E5M2", 1},
};

constexpr int kMaxJsonDepth = 8;

Result<uint64_t> CheckedNumel(const std::vector<int64_t>& shape) {
  uint64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) return OutOfRange("negative dimension");
    if (__builtin_mul_overflow(n, static_cast<uint64_t>(d), &n)) {
      return OutOfRange("shape overflows 64 bits");
    }
  }
  return n;
}

}  // namespace

const char* DtypeName(Dtype dtype) {
  for (const auto& e : kDtypes)
    if (e.dtype == dtype) return e.name;
  return "?";
}

Result<Dtype> ParseDtype(const std::string& name) {
  for (const auto& e : kDtypes)
    if (name == e.name) return e.dtype;
  return InvalidArgument("unknown dtype '" + name + "'");
}

size_t DtypeSize(Dtype dtype) {
  for (const auto& e : kDtypes)
    if (e.dtype == dtype) return e.size;
  return 0;
}

std::vector<Dtype> AllDtypes() {
  std::vector<Dtype> out;
  for (const auto& e : kDtypes) out.push_back(e.dtype);
  return out;
}

int64_t TensorInfo::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

Result<View> View::Parse(std::span<const std::byte> bytes, const std::string& source) {
  const std::string where = source.empty() ? "<safetensors>" : source;
  if (bytes.size() < 8) {
    return DataLoss(where + ": file is " + std::to_string(bytes.size()) +
                    " bytes, too short for the 8-byte header length");
  }
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<uint8_t>(bytes[i]);
  if (n > kMaxHeaderBytes) {
    return DataLoss(where + ": header length " + std::to_string(n) + " exceeds the limit of " +
                    std::to_string(kMaxHeaderBytes) + " bytes");
  }
  if (n > bytes.size() - 8) {
    return DataLoss(where + ": header length " + std::to_string(n) + " runs past the end of the " +
                    std::to_string(bytes.size()) + "-byte file (truncated?)");
  }
  if (n < 2) return DataLoss(where + ": header is too short to be a JSON object");
  const char* hdr = reinterpret_cast<const char*>(bytes.data() + 8);

  json header;
  try {
    header = json::parse(hdr, hdr + n, [](int depth, json::parse_event_t, json&) {
      if (depth > kMaxJsonDepth) throw std::out_of_range("json nesting too deep");
      return true;
    });
  } catch (const std::exception& e) {
    return DataLoss(where + ": header is not valid JSON: " + e.what());
  }
  if (!header.is_object()) return DataLoss(where + ": header is not a JSON object");

  View view;
  view.data_ = bytes.subspan(8 + n);
  const uint64_t data_size = view.data_.size();

  for (auto it = header.begin(); it != header.end(); ++it) {
    const std::string& name = it.key();
    const json& entry = it.value();
    if (name == "__metadata__") {
      if (!entry.is_object()) return DataLoss(where + ": __metadata__ is not an object");
      for (auto m = entry.begin(); m != entry.end(); ++m) {
        if (!m.value().is_string()) {
          return DataLoss(where + ": __metadata__." + m.key() + " is not a string");
        }
        view.metadata_[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    const std::string at = where + ": tensor '" + name + "'";
    if (!entry.is_object()) return DataLoss(at + ": entry is not an object");
    auto dt = entry.find("dtype");
    auto sh = entry.find("shape");
    auto off = entry.find("data_offsets");
    if (dt == entry.end() || !dt->is_string()) return DataLoss(at + ": missing string 'dtype'");
    if (sh == entry.end() || !sh->is_array()) return DataLoss(at + ": missing array 'shape'");
    if (off == entry.end() || !off->is_array() || off->size() != 2) {
      return DataLoss(at + ": 'data_offsets' must be [begin, end]");
    }
    TensorInfo info;
    info.name = name;
    auto dtype = ParseDtype(dt->get<std::string>());
    if (!dtype.ok()) return DataLoss(at + ": " + dtype.status().message());
    info.dtype = *dtype;
    if (sh->size() > kMaxRank) return DataLoss(at + ": rank above " + std::to_string(kMaxRank));
    for (const auto& d : *sh) {
      if (!d.is_number_unsigned()) return DataLoss(at + ": shape entries must be integers >= 0");
      const uint64_t v = d.get<uint64_t>();
      if (v > static_cast<uint64_t>(INT64_MAX)) return DataLoss(at + ": dimension too large");
      info.shape.push_back(static_cast<int64_t>(v));
    }
    for (const auto& o : *off) {
      if (!o.is_number_unsigned()) return DataLoss(at + ": data_offsets must be integers >= 0");
    }
    info.begin = (*off)[0].get<uint64_t>();
    info.end = (*off)[1].get<uint64_t>();
    if (info.begin > info.end) {
      return DataLoss(at + ": data_offsets begin " + std::to_string(info.begin) + " > end " +
                      std::to_string(info.end));
    }
    if (info.end > data_size) {
      return DataLoss(at + ": data_offsets end " + std::to_string(info.end) +
                      " is past the data buffer (" + std::to_string(data_size) + " bytes)");
    }
    auto numel = CheckedNumel(info.shape);
    if (!numel.ok()) return DataLoss(at + ": " + numel.status().message());
    uint64_t expected = 0;
    if (__builtin_mul_overflow(*numel, DtypeSize(info.dtype), &expected) ||
        expected != info.nbytes()) {
      return DataLoss(at + ": shape and dtype need " + std::to_string(expected) +
                      " bytes but data_offsets span " + std::to_string(info.nbytes()));
    }
    view.tensors_.push_back(std::move(info));
  }

  std::sort(view.tensors_.begin(), view.tensors_.end(), [](const auto& a, const auto& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  // The tensors must tile the buffer: no overlap, no hole, nothing left over.
  uint64_t cursor = 0;
  for (const auto& t : view.tensors_) {
    if (t.begin < cursor) {
      return DataLoss(where + ": tensor '" + t.name + "' overlaps the previous tensor at offset " +
                      std::to_string(t.begin));
    }
    if (t.begin > cursor) {
      return DataLoss(where + ": gap in the data buffer before tensor '" + t.name +
                      "' (offset " + std::to_string(cursor) + " to " + std::to_string(t.begin) +
                      ")");
    }
    cursor = t.end;
  }
  if (cursor != data_size) {
    return DataLoss(where + ": data buffer has " + std::to_string(data_size - cursor) +
                    " bytes that no tensor describes");
  }
  for (size_t i = 0; i < view.tensors_.size(); ++i) view.index_[view.tensors_[i].name] = i;
  return view;
}

const TensorInfo* View::Find(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

std::span<const std::byte> View::Data(const TensorInfo& info) const {
  return data_.subspan(info.begin, info.end - info.begin);
}

Result<std::unique_ptr<File>> File::Open(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return NotFound(path + ": " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    return Internal(path + ": fstat: " + std::strerror(errno));
  }
  std::unique_ptr<File> file(new File());
  file->path_ = path;
  file->size_ = static_cast<size_t>(st.st_size);
  if (file->size_ > 0) {
    file->map_ = ::mmap(nullptr, file->size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (file->map_ == MAP_FAILED) {
      file->map_ = nullptr;
      ::close(fd);
      return Internal(path + ": mmap: " + std::strerror(errno));
    }
  }
  ::close(fd);
  auto view = View::Parse(
      std::span<const std::byte>(static_cast<const std::byte*>(file->map_), file->size_), path);
  if (!view.ok()) return view.status();
  file->view_ = std::move(*view);
  return file;
}

File::~File() {
  if (map_ != nullptr) ::munmap(map_, size_);
}

Result<std::string> Serialize(const std::vector<TensorRef>& tensors,
                              const std::map<std::string, std::string>& metadata) {
  json header = json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (const auto& t : tensors) {
    if (t.name.empty() || t.name == "__metadata__") {
      return InvalidArgument("safetensors: invalid tensor name '" + t.name + "'");
    }
    if (header.contains(t.name)) {
      return InvalidArgument("safetensors: duplicate tensor name '" + t.name + "'");
    }
    auto numel = CheckedNumel(t.shape);
    if (!numel.ok()) return InvalidArgument("safetensors: " + t.name + ": bad shape");
    if (*numel * DtypeSize(t.dtype) != t.data.size()) {
      return InvalidArgument("safetensors: " + t.name + ": shape needs " +
                             std::to_string(*numel * DtypeSize(t.dtype)) + " bytes, got " +
                             std::to_string(t.data.size()));
    }
    header[t.name] = {{"dtype", DtypeName(t.dtype)},
                      {"shape", t.shape},
                      {"data_offsets", {offset, offset + t.data.size()}}};
    offset += t.data.size();
  }
  std::string text = header.dump();
  // Pad with spaces so the data buffer starts 8-byte aligned.
  while ((8 + text.size()) % 8 != 0) text.push_back(' ');
  std::string out;
  out.reserve(8 + text.size() + offset);
  uint64_t n = text.size();
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
  out += text;
  for (const auto& t : tensors) {
    out.append(reinterpret_cast<const char*>(t.data.data()), t.data.size());
  }
  return out;
}

Status Write(const std::string& path, const std::vector<TensorRef>& tensors,
             const std::map<std::string, std::string>& metadata) {
  ALLOT_ASSIGN_OR_RETURN(std::string bytes, Serialize(tensors, metadata));
  return WriteFileAtomic(path, bytes);
}

Result<ShardedCheckpoint> ShardedCheckpoint::Open(const std::string& dir, const std::string& stem) {
  namespace fs = std::filesystem;
  ShardedCheckpoint ckpt;
  const fs::path single = fs::path(dir) / (stem + ".safetensors");
  const fs::path index = fs::path(dir) / (stem + ".safetensors.index.json");
  if (fs::exists(index)) {
    std::string text;
    ALLOT_RETURN_IF_ERROR(ReadFile(index.string(), &text));
    json j;
    try {
      j = json::parse(text);
    } catch (const std::exception& e) {
      return DataLoss(index.string() + ": not valid JSON: " + e.what());
    }
    if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object()) {
      return DataLoss(index.string() + ": missing object 'weight_map'");
    }
    std::map<std::string, size_t> shard_ids;
    for (auto it = j["weight_map"].begin(); it != j["weight_map"].end(); ++it) {
      if (!it.value().is_string()) {
        return DataLoss(index.string() + ": weight_map." + it.key() + " is not a file name");
      }
      const std::string shard = it.value().get<std::string>();
      if (shard.find('/') != std::string::npos || shard == "..") {
        return DataLoss(index.string() + ": weight_map." + it.key() + ": shard '" + shard +
                        "' must be a file name in the same directory");
      }
      if (!shard_ids.count(shard)) {
        auto file = File::Open((fs::path(dir) / shard).string());
        if (!file.ok()) return file.status().Annotate(index.string());
        shard_ids[shard] = ckpt.files_.size();
        ckpt.files_.push_back(std::shared_ptr<File>(std::move(*file)));
      }
      const size_t id = shard_ids[shard];
      const TensorInfo* info = ckpt.files_[id]->Find(it.key());
      if (info == nullptr) {
        return DataLoss(index.string() + ": tensor '" + it.key() + "' is not in shard " + shard);
      }
      ckpt.where_[it.key()] = {id, info};
    }
    return ckpt;
  }
  if (fs::exists(single)) {
    ALLOT_ASSIGN_OR_RETURN(auto file, File::Open(single.string()));
    ckpt.files_.push_back(std::shared_ptr<File>(std::move(file)));
    for (const auto& t : ckpt.files_[0]->tensors()) ckpt.where_[t.name] = {0, &t};
    return ckpt;
  }
  return NotFound(dir + ": neither " + single.filename().string() + " nor " +
                  index.filename().string() + " exists");
}

std::vector<std::string> ShardedCheckpoint::names() const {
  std::vector<std::string> out;
  for (const auto& [name, w] : where_) out.push_back(name);
  return out;
}

const TensorInfo* ShardedCheckpoint::Find(const std::string& name, const File** file) const {
  auto it = where_.find(name);
  if (it == where_.end()) return nullptr;
  if (file != nullptr) *file = files_[it->second.first].get();
  return it->second.second;
}

}  // namespace allot::safetensors
