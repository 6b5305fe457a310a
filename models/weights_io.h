// The bridge between safetensors files (core/safetensors.h) and LibTorch tensors.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/ScalarType.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/safetensors.h"
#include "core/status.h"

namespace allot::models {

// F32, F16 and BF16 (the weight dtypes); anything else is InvalidArgument naming `where`.
Result<at::ScalarType> ToScalarType(safetensors::Dtype dtype, const std::string& where);
Result<safetensors::Dtype> ToSafetensorsDtype(at::ScalarType type);

// "float32" | "fp32" | "bfloat16" | "bf16" | "float16" | "fp16" (Hugging Face torch_dtype names).
Result<at::ScalarType> ParseDtypeName(const std::string& name);
// The Hugging Face torch_dtype name ("bfloat16").
std::string DtypeName(at::ScalarType type);

// A CPU tensor holding a copy of one stored tensor.
Result<at::Tensor> ReadTensor(const safetensors::File& file, const safetensors::TensorInfo& info);

// Copies the tensor `name` of `checkpoint` into `dst` (any dtype/device), converting the dtype.
// A missing tensor or a shape mismatch is an error naming `source` (the checkpoint) and `name`.
Status LoadInto(const safetensors::ShardedCheckpoint& checkpoint, const std::string& source,
                const std::string& name, at::Tensor dst);

// Writes named tensors (any device; non-contiguous is fine) to one safetensors file, atomically.
using NamedTensors = std::vector<std::pair<std::string, at::Tensor>>;
Status WriteTensors(const std::string& path, const NamedTensors& tensors,
                    const std::map<std::string, std::string>& metadata = {});

}  // namespace allot::models
