#include "llm/serve/api_request.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace allot::llm::serve {
namespace {

bool Parse(const std::string& body, GenerateRequest* out, ApiError* error) {
  return ParseGenerateRequest(nlohmann::json::parse(body), /*chat=*/false,
                              /*default_max_tokens=*/16, out, error);
}

// Shown by UBSan in the llm_serve_request_fuzz target: 2^63 written as a float passed the
// range check against INT64_MAX (compared as doubles, where INT64_MAX rounds up to 2^63) and
// was then converted to int64_t, which is undefined.
TEST(ApiRequestTest, IntegerFieldsAreRangeCheckedInTheirOwnType) {
  for (const char* seed : {"9223372036854775807.0", "9.3e18", "9223372036854775808",
                           "18446744073709551615", "-9.3e18"}) {
    GenerateRequest request;
    ApiError error;
    EXPECT_FALSE(Parse(std::string(R"({"prompt": "a", "seed": )") + seed + "}", &request, &error))
        << seed;
    EXPECT_EQ(error.param, "seed") << seed;
  }
  GenerateRequest request;
  ApiError error;
  ASSERT_TRUE(Parse(R"({"prompt": "a", "seed": 9223372036854775807})", &request, &error))
      << error.message;
  EXPECT_EQ(request.params.seed, uint64_t{9223372036854775807u});
  ASSERT_TRUE(Parse(R"({"prompt": "a", "seed": -9223372036854775808, "max_tokens": 2.0})", &request,
                    &error))
      << error.message;
  EXPECT_EQ(request.params.seed, uint64_t{9223372036854775808u});
  EXPECT_EQ(request.params.max_tokens, 2);
  EXPECT_FALSE(Parse(R"({"prompt": "a", "max_tokens": 2147483648})", &request, &error));
  EXPECT_FALSE(Parse(R"({"prompt": "a", "n": 0})", &request, &error));
  EXPECT_EQ(error.param, "n");
}

}  // namespace
}  // namespace allot::llm::serve
