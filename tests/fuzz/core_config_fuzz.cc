// Fuzzes the config loader: YAML parsing, env interpolation, overrides and typed binding must
// return a Status for any input, never crash or hang.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/config/binder.h"
#include "core/config/node.h"

namespace {

struct Section {
  double lr = 0.01;
  int batch = 64;
  std::string loss = "mse";
  std::vector<std::string> names;
  void Describe(allot::config::Visitor& v) {
    v.Field("lr", lr, {.min = 0.0});
    v.Field("batch", batch, {.min = 1});
    v.Field("loss", loss, {.choices = {"mse", "huber"}});
    v.Field("names", names);
  }
};

struct Root {
  std::string name;
  Section dqn;
  std::vector<Section> list;
  void Describe(allot::config::Visitor& v) {
    v.Field("name", name);
    v.Field("dqn", dqn);
    v.Field("list", list);
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  auto node = allot::config::ParseYaml(text, "fuzz.yaml");
  if (!node.ok()) return 0;
  auto env = [](const std::string& n) -> std::optional<std::string> {
    if (n == "A") return "1";
    return std::nullopt;
  };
  (void)allot::config::InterpolateEnv(*node, env);
  (void)allot::config::ApplyOverride(*node, "dqn.lr=0.5");
  Root r;
  if (allot::config::Load(*node, r).ok()) {
    (void)allot::config::ToYaml(r);
  }
  return 0;
}
