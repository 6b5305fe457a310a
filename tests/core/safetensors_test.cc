#include "core/safetensors.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/core/temp_dir.h"

namespace allot::safetensors {
namespace {

using testing::TempDir;

std::span<const std::byte> Bytes(const std::string& s) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

// A file image from a raw header string and data bytes.
std::string Image(const std::string& header, const std::string& data) {
  std::string out;
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
  return out + header + data;
}

Status ParseStatus(const std::string& image) { return View::Parse(Bytes(image), "t.st").status(); }

TEST(SafetensorsTest, RoundTripEveryDtype) {
  TempDir dir;
  std::vector<std::string> buffers;
  std::vector<TensorRef> refs;
  for (Dtype d : AllDtypes()) {
    const std::vector<int64_t> shape = {2, 3};
    std::string buf(6 * DtypeSize(d), '\0');
    for (size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<char>(i * 7 + 1 + (int)d);
    buffers.push_back(buf);
  }
  size_t i = 0;
  for (Dtype d : AllDtypes()) {
    refs.push_back({std::string("t_") + DtypeName(d), d, {2, 3}, Bytes(buffers[i++])});
  }
  const std::string path = dir.Join("all.safetensors");
  ASSERT_TRUE(Write(path, refs, {{"format", "pt"}}).ok());
  auto file = File::Open(path);
  ASSERT_TRUE(file.ok()) << file.status().message();
  EXPECT_EQ((*file)->metadata().at("format"), "pt");
  ASSERT_EQ((*file)->tensors().size(), AllDtypes().size());
  i = 0;
  for (Dtype d : AllDtypes()) {
    const TensorInfo* t = (*file)->Find(std::string("t_") + DtypeName(d));
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(t->dtype, d);
    EXPECT_EQ(t->shape, (std::vector<int64_t>{2, 3}));
    auto data = (*file)->Data(*t);
    ASSERT_EQ(data.size(), buffers[i].size());
    EXPECT_EQ(std::memcmp(data.data(), buffers[i].data(), data.size()), 0);
    ++i;
  }
}

TEST(SafetensorsTest, HeaderIsPaddedToEightBytes) {
  std::string data(4, '\0');
  auto bytes = Serialize({{"x", Dtype::kF32, {1}, Bytes(data)}});
  ASSERT_TRUE(bytes.ok());
  uint64_t n = 0;
  std::memcpy(&n, bytes->data(), 8);
  EXPECT_EQ((8 + n) % 8, 0u);
}

TEST(SafetensorsTest, EmptyAndScalarTensors) {
  std::string one(8, '\x01');
  auto bytes = Serialize({{"empty", Dtype::kF32, {0, 4}, {}}, {"scalar", Dtype::kF64, {}, Bytes(one)}});
  ASSERT_TRUE(bytes.ok());
  auto view = View::Parse(Bytes(*bytes), "mem");
  ASSERT_TRUE(view.ok()) << view.status().message();
  EXPECT_EQ(view->Find("empty")->nbytes(), 0u);
  EXPECT_EQ(view->Find("scalar")->numel(), 1);
}

TEST(SafetensorsTest, WriterRejectsSizeMismatchAndDuplicates) {
  std::string data(4, '\0');
  EXPECT_FALSE(Serialize({{"x", Dtype::kF32, {2}, Bytes(data)}}).ok());
  EXPECT_FALSE(Serialize({{"x", Dtype::kF32, {1}, Bytes(data)}, {"x", Dtype::kF32, {1}, Bytes(data)}}).ok());
}

struct Malformed {
  const char* what;
  std::string image;
  const char* expect;  // substring of the error
};

TEST(SafetensorsTest, MalformedFilesGetClearErrors) {
  const std::string ok_header = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  std::string truncated_len = Image(ok_header, std::string(8, '\0')).substr(0, 5);
  std::string past_end = Image(ok_header, std::string(8, '\0'));
  past_end[0] = static_cast<char>(0xff);
  past_end[1] = static_cast<char>(0x0f);
  std::string huge_len(8, '\xff');
  const std::vector<Malformed> cases = {
      {"empty file", "", "too short for the 8-byte header length"},
      {"truncated length", truncated_len, "too short"},
      {"header past end", past_end, "runs past the end"},
      {"huge header length", huge_len + "{}", "exceeds the limit"},
      {"not json", Image("{nope", ""), "not valid JSON"},
      {"json array", Image("[1,2]", ""), "not a JSON object"},
      {"unknown dtype", Image(R"({"a":{"dtype":"F128","shape":[1],"data_offsets":[0,16]}})", std::string(16, 0)), "unknown dtype 'F128'"},
      {"missing dtype", Image(R"({"a":{"shape":[1],"data_offsets":[0,4]}})", std::string(4, 0)), "missing string 'dtype'"},
      {"negative dim", Image(R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", std::string(4, 0)), "shape entries must be integers >= 0"},
      {"shape mismatch", Image(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", std::string(8, 0)), "need 12 bytes but data_offsets span 8"},
      {"offset past data", Image(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", std::string(8, 0)), "past the data buffer"},
      {"begin after end", Image(R"({"a":{"dtype":"U8","shape":[0],"data_offsets":[4,0]}})", std::string(4, 0)), "begin 4 > end 0"},
      {"overlap", Image(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", std::string(8, 0)), "overlaps"},
      {"hole", Image(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", std::string(8, 0)), "gap in the data buffer"},
      {"trailing bytes", Image(ok_header, std::string(12, 0)), "no tensor describes"},
      {"overflowing shape", Image(R"({"a":{"dtype":"F64","shape":[4294967296,4294967296],"data_offsets":[0,8]}})", std::string(8, 0)), "overflows"},
      {"metadata not strings", Image(R"({"__metadata__":{"k":1}})", ""), "__metadata__.k is not a string"},
      {"deep json", Image(std::string(100, '[') + std::string(100, ']'), ""), "not valid JSON"},
      {"offsets not pair", Image(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0]}})", std::string(4, 0)), "must be [begin, end]"},
  };
  for (const auto& c : cases) {
    Status s = ParseStatus(c.image);
    EXPECT_FALSE(s.ok()) << c.what;
    EXPECT_EQ(s.code(), StatusCode::kDataLoss) << c.what;
    EXPECT_NE(s.message().find(c.expect), std::string::npos) << c.what << ": " << s.message();
    EXPECT_EQ(s.message().rfind("t.st", 0), 0u) << c.what << ": error must name the file";
  }
}

TEST(SafetensorsTest, EveryTruncationOfAValidFileIsRejected) {
  std::string data(24, '\x05');
  auto bytes = Serialize({{"a", Dtype::kF32, {2}, Bytes(data.substr(0, 8))},
                          {"b", Dtype::kI64, {2}, Bytes(data.substr(8, 16))}});
  ASSERT_TRUE(bytes.ok());
  for (size_t n = 0; n < bytes->size(); ++n) {
    EXPECT_FALSE(View::Parse(Bytes(bytes->substr(0, n)), "trunc").ok()) << "length " << n;
  }
  EXPECT_TRUE(View::Parse(Bytes(*bytes), "full").ok());
}

TEST(SafetensorsTest, OpenMissingFileIsNotFound) {
  auto f = File::Open("/nonexistent/allot/x.safetensors");
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), StatusCode::kNotFound);
}

TEST(SafetensorsTest, ShardedCheckpointFollowsTheIndex) {
  TempDir dir;
  std::string a(8, '\x01'), b(4, '\x02');
  ASSERT_TRUE(Write(dir.Join("model-00001-of-00002.safetensors"),
                    {{"w1", Dtype::kF32, {2}, Bytes(a)}}).ok());
  ASSERT_TRUE(Write(dir.Join("model-00002-of-00002.safetensors"),
                    {{"w2", Dtype::kF32, {1}, Bytes(b)}}).ok());
  dir.Write("model.safetensors.index.json",
            R"({"metadata":{"total_size":12},"weight_map":{"w1":"model-00001-of-00002.safetensors","w2":"model-00002-of-00002.safetensors"}})");
  auto ckpt = ShardedCheckpoint::Open(dir.path());
  ASSERT_TRUE(ckpt.ok()) << ckpt.status().message();
  EXPECT_EQ(ckpt->names(), (std::vector<std::string>{"w1", "w2"}));
  const File* file = nullptr;
  const TensorInfo* t = ckpt->Find("w2", &file);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(file->Data(*t)[0], std::byte{2});
}

TEST(SafetensorsTest, ShardIndexErrors) {
  TempDir dir;
  dir.Write("model.safetensors.index.json", R"({"weight_map":{"w":"missing.safetensors"}})");
  auto ckpt = ShardedCheckpoint::Open(dir.path());
  ASSERT_FALSE(ckpt.ok());
  EXPECT_NE(ckpt.status().message().find("missing.safetensors"), std::string::npos);
  dir.Write("model.safetensors.index.json", R"({"weight_map":{"w":"../escape.safetensors"}})");
  EXPECT_FALSE(ShardedCheckpoint::Open(dir.path()).ok());
  TempDir empty;
  EXPECT_EQ(ShardedCheckpoint::Open(empty.path()).status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace allot::safetensors
