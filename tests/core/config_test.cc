#include <gtest/gtest.h>

#include "core/config/binder.h"

namespace allot::config {
namespace {

struct Inner {
  double lr = 0.01;
  int batch = 64;
  void Describe(Visitor& v) {
    v.Field("lr", lr, {.min = 0.0});
    v.Field("batch", batch, {.min = 1});
  }
};
struct Outer {
  std::string name = "x";
  Inner dqn;
  void Describe(Visitor& v) {
    v.Field("name", name);
    v.Field("dqn", dqn);
  }
};

TEST(ConfigTest, UnknownKeySuggests) {
  auto root = ParseYaml("name: a\ndqn:\n  lrr: 0.5\n", "x.yaml");
  ASSERT_TRUE(root.ok());
  Outer o;
  Status s = Load(*root, o);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("x.yaml:3:8: dqn.lrr: unknown key (did you mean 'dqn.lr'?)"),
            std::string::npos)
      << s.message();
}

}  // namespace
}  // namespace allot::config
