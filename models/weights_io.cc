#include "models/weights_io.h"

#include <torch/torch.h>

#include <cstring>

namespace allot::models {

Result<at::ScalarType> ToScalarType(safetensors::Dtype dtype, const std::string& where) {
  switch (dtype) {
    case safetensors::Dtype::kF32:
      return at::kFloat;
    case safetensors::Dtype::kF16:
      return at::kHalf;
    case safetensors::Dtype::kBF16:
      return at::kBFloat16;
    default:
      return InvalidArgument(where + ": dtype " + safetensors::DtypeName(dtype) +
                             " is not a supported weight dtype (F32, F16, BF16)");
  }
}

Result<safetensors::Dtype> ToSafetensorsDtype(at::ScalarType type) {
  switch (type) {
    case at::kFloat:
      return safetensors::Dtype::kF32;
    case at::kHalf:
      return safetensors::Dtype::kF16;
    case at::kBFloat16:
      return safetensors::Dtype::kBF16;
    default:
      return InvalidArgument(std::string("cannot store tensor dtype ") + c10::toString(type));
  }
}

Result<at::ScalarType> ParseDtypeName(const std::string& name) {
  if (name == "float32" || name == "fp32" || name == "float") return at::kFloat;
  if (name == "bfloat16" || name == "bf16") return at::kBFloat16;
  if (name == "float16" || name == "fp16" || name == "half") return at::kHalf;
  return InvalidArgument("unknown dtype '" + name + "' (expected float32, bfloat16 or float16)");
}

std::string DtypeName(at::ScalarType type) {
  switch (type) {
    case at::kBFloat16:
      return "bfloat16";
    case at::kHalf:
      return "float16";
    default:
      return "float32";
  }
}

Result<at::Tensor> ReadTensor(const safetensors::File& file, const safetensors::TensorInfo& info) {
  ALLOT_ASSIGN_OR_RETURN(at::ScalarType type,
                         ToScalarType(info.dtype, file.path() + ": tensor '" + info.name + "'"));
  at::Tensor out = torch::empty(info.shape, torch::TensorOptions().dtype(type));
  auto bytes = file.Data(info);
  if (static_cast<size_t>(out.nbytes()) != bytes.size()) {
    return DataLoss(file.path() + ": tensor '" + info.name + "' has " +
                    std::to_string(bytes.size()) + " bytes, its shape needs " +
                    std::to_string(out.nbytes()));
  }
  // A copy, not from_blob: the stored bytes need not be aligned for the element type.
  if (!bytes.empty()) std::memcpy(out.data_ptr(), bytes.data(), bytes.size());
  return out;
}

Status LoadInto(const safetensors::ShardedCheckpoint& checkpoint, const std::string& source,
                const std::string& name, at::Tensor dst) {
  const safetensors::File* file = nullptr;
  const safetensors::TensorInfo* info = checkpoint.Find(name, &file);
  if (info == nullptr) return NotFound(source + ": missing tensor '" + name + "'");
  const std::vector<int64_t> want = dst.sizes().vec();
  if (info->shape != want) {
    return InvalidArgument(file->path() + ": tensor '" + name + "' has shape " +
                           c10::str(c10::IntArrayRef(info->shape)) + ", the model expects " +
                           c10::str(dst.sizes()));
  }
  ALLOT_ASSIGN_OR_RETURN(at::Tensor t, ReadTensor(*file, *info));
  torch::NoGradGuard no_grad;
  dst.copy_(t);
  return Status::Ok();
}

Status WriteTensors(const std::string& path, const NamedTensors& tensors,
                    const std::map<std::string, std::string>& metadata) {
  std::vector<at::Tensor> keep;
  std::vector<safetensors::TensorRef> refs;
  keep.reserve(tensors.size());
  refs.reserve(tensors.size());
  for (const auto& [name, tensor] : tensors) {
    at::Tensor t = tensor.detach().to(torch::kCPU).contiguous();
    ALLOT_ASSIGN_OR_RETURN(safetensors::Dtype dtype, ToSafetensorsDtype(t.scalar_type()));
    keep.push_back(t);
    safetensors::TensorRef ref;
    ref.name = name;
    ref.dtype = dtype;
    ref.shape = t.sizes().vec();
    ref.data = std::span<const std::byte>(static_cast<const std::byte*>(t.data_ptr()),
                                          static_cast<size_t>(t.nbytes()));
    refs.push_back(std::move(ref));
  }
  Status s = safetensors::Write(path, refs, metadata);
  if (!s.ok()) return s.Annotate("writing " + path);
  return Status::Ok();
}

}  // namespace allot::models
