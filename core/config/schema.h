// Typed config structs and the visitor that binds them to YAML.
//
// A config section is a plain struct whose member initializers are the defaults (the one place
// they live) and whose Describe() lists its fields once:
//
//   struct DqnConfig {
//     double lr = 0.01;
//     int batch_size = 64;
//     void Describe(config::Visitor& v) {
//       v.Field("lr", lr, {.doc = "Adam learning rate", .min = 0.0});
//       v.Field("batch_size", batch_size, {.min = 1});
//     }
//   };
//
// The same Describe() drives loading (with unknown-key, type and range errors), printing the
// resolved config (with secrets redacted) and `config defaults`.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace allot::config {

struct FieldSpec {
  std::string doc;
  std::optional<double> min;            // inclusive
  std::optional<double> max;            // inclusive
  std::vector<std::string> choices;     // for strings: the allowed values
  bool secret = false;                  // always redacted when printed (API keys)
};

class Visitor {
 public:
  virtual ~Visitor() = default;

  virtual void Value(std::string_view key, bool& v, const FieldSpec& spec) = 0;
  virtual void Value(std::string_view key, int64_t& v, const FieldSpec& spec) = 0;
  virtual void Value(std::string_view key, double& v, const FieldSpec& spec) = 0;
  virtual void Value(std::string_view key, std::string& v, const FieldSpec& spec) = 0;
  virtual void Value(std::string_view key, std::vector<std::string>& v, const FieldSpec& spec) = 0;
  virtual void Value(std::string_view key, std::vector<double>& v, const FieldSpec& spec) = 0;
  virtual void Value(std::string_view key, std::vector<int64_t>& v, const FieldSpec& spec) = 0;

  // Sections: a nested struct. Returns false when the visitor wants to skip its fields.
  virtual bool BeginSection(std::string_view key, const FieldSpec& spec) = 0;
  virtual void EndSection() = 0;

  // Lists of sections: BeginList returns how many items to visit (a loader returns the count
  // in the YAML, a printer the current size); each item is visited between BeginItem/EndItem.
  virtual size_t BeginList(std::string_view key, size_t current_size, const FieldSpec& spec) = 0;
  virtual void BeginItem(size_t index) = 0;
  virtual void EndItem() = 0;
  virtual void EndList() = 0;

  // Typed front door used by Describe() implementations.
  template <typename T>
  void Field(std::string_view key, T& v, const FieldSpec& spec = {}) {
    if constexpr (std::is_same_v<T, int> || std::is_same_v<T, int32_t> ||
                  std::is_same_v<T, uint32_t> || std::is_same_v<T, uint64_t>) {
      int64_t wide = static_cast<int64_t>(v);
      FieldSpec bounded = spec;
      if (!bounded.min) bounded.min = static_cast<double>(std::numeric_limits<T>::min());
      if (!bounded.max && !std::is_same_v<T, uint64_t>) {
        bounded.max = static_cast<double>(std::numeric_limits<T>::max());
      }
      Value(key, wide, bounded);
      v = static_cast<T>(wide);
    } else if constexpr (std::is_same_v<T, float>) {
      double wide = v;
      Value(key, wide, spec);
      v = static_cast<float>(wide);
    } else if constexpr (IsVector<T>::value && HasDescribe<typename IsVector<T>::Elem>::value) {
      const size_t n = BeginList(key, v.size(), spec);
      v.resize(n);
      for (size_t i = 0; i < n; ++i) {
        BeginItem(i);
        v[i].Describe(*this);
        EndItem();
      }
      EndList();
    } else if constexpr (HasDescribe<T>::value) {
      if (BeginSection(key, spec)) {
        v.Describe(*this);
        EndSection();
      }
    } else {
      Value(key, v, spec);
    }
  }

 private:
  template <typename T, typename = void>
  struct HasDescribe : std::false_type {};
  template <typename T>
  struct HasDescribe<T, std::void_t<decltype(std::declval<T&>().Describe(std::declval<Visitor&>()))>>
      : std::true_type {};
  template <typename T>
  struct IsVector : std::false_type {
    using Elem = void;
  };
  template <typename E>
  struct IsVector<std::vector<E>> : std::true_type {
    using Elem = E;
  };
};

}  // namespace allot::config
