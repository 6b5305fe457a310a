#include "trainer/dqn/navigator_onnx.h"

#include <onnx/checker.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <map>

namespace allot::trainer {
namespace {

constexpr int kOpset = 13;

void AddFloatTensor(onnx::GraphProto* g, const std::string& name, const std::vector<int64_t>& dims,
                    const std::vector<float>& values) {
  onnx::TensorProto* t = g->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t->add_dims(d);
  for (float v : values) t->add_float_data(v);
}

onnx::NodeProto* AddNode(onnx::GraphProto* g, const std::string& op,
                         std::initializer_list<std::string> inputs, const std::string& output) {
  onnx::NodeProto* n = g->add_node();
  n->set_op_type(op);
  n->set_name(output);
  for (const auto& in : inputs) n->add_input(in);
  n->add_output(output);
  return n;
}

void SetInt(onnx::NodeProto* n, const std::string& name, int64_t v) {
  onnx::AttributeProto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}

void AddIo(onnx::ValueInfoProto* v, const std::string& name, int64_t width) {
  v->set_name(name);
  auto* tt = v->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::FLOAT);
  tt->mutable_shape()->add_dim()->set_dim_param("batch");
  tt->mutable_shape()->add_dim()->set_dim_value(width);
}

onnx::NodeProto* Gemm(onnx::GraphProto* g, const std::string& x, const std::string& layer,
                      const std::string& out) {
  onnx::NodeProto* n = AddNode(g, "Gemm", {x, layer + ".weight", layer + ".bias"}, out);
  SetInt(n, "transB", 1);
  return n;
}

// A dense float tensor of the interpreter.
struct Tensor {
  std::vector<int64_t> shape;
  std::vector<float> v;
  int64_t dim(int i) const { return i < static_cast<int>(shape.size()) ? shape[i] : 1; }
};

Result<Tensor> FromProto(const onnx::TensorProto& t) {
  if (t.data_type() != onnx::TensorProto::FLOAT) {
    return InvalidArgument("initializer '" + t.name() + "' is not FLOAT");
  }
  Tensor out;
  out.shape.assign(t.dims().begin(), t.dims().end());
  int64_t n = 1;
  for (int64_t d : out.shape) n *= d;
  if (t.float_data_size() == n) {
    out.v.assign(t.float_data().begin(), t.float_data().end());
  } else if (static_cast<int64_t>(t.raw_data().size()) == n * 4) {
    out.v.resize(static_cast<size_t>(n));
    std::memcpy(out.v.data(), t.raw_data().data(), t.raw_data().size());
  } else {
    return InvalidArgument("initializer '" + t.name() + "' holds the wrong number of values");
  }
  return out;
}

// Elementwise with numpy broadcasting for ranks <= 2 (all the export uses).
Result<Tensor> Broadcast(const Tensor& a, const Tensor& b, float (*f)(float, float),
                         const std::string& op) {
  if (a.shape.size() > 2 || b.shape.size() > 2) return InvalidArgument(op + ": rank > 2");
  // Right-align shapes to rank 2.
  auto r2 = [](const Tensor& t) {
    std::vector<int64_t> s = t.shape;
    while (s.size() < 2) s.insert(s.begin(), 1);
    return s;
  };
  auto sa = r2(a), sb = r2(b);
  std::vector<int64_t> so(2);
  for (int i = 0; i < 2; ++i) {
    if (sa[i] != sb[i] && sa[i] != 1 && sb[i] != 1)
      return InvalidArgument(op + ": shapes do not broadcast");
    so[i] = std::max(sa[i], sb[i]);
  }
  Tensor out;
  const auto rank = static_cast<std::ptrdiff_t>(std::max(a.shape.size(), b.shape.size()));
  out.shape.assign(so.end() - rank, so.end());
  out.v.resize(static_cast<size_t>(so[0] * so[1]));
  for (int64_t i = 0; i < so[0]; ++i) {
    for (int64_t j = 0; j < so[1]; ++j) {
      const float x = a.v[static_cast<size_t>((sa[0] == 1 ? 0 : i) * sa[1] + (sa[1] == 1 ? 0 : j))];
      const float y = b.v[static_cast<size_t>((sb[0] == 1 ? 0 : i) * sb[1] + (sb[1] == 1 ? 0 : j))];
      out.v[static_cast<size_t>(i * so[1] + j)] = f(x, y);
    }
  }
  return out;
}

int64_t IntAttr(const onnx::NodeProto& n, const std::string& name, int64_t fallback) {
  for (const auto& a : n.attribute()) {
    if (a.name() == name) return a.i();
  }
  return fallback;
}

}  // namespace

bool OnnxExportAvailable() { return true; }

Result<std::string> BuildNavigatorOnnx(const NavigatorWeights& w) {
  onnx::ModelProto m;
  m.set_ir_version(onnx::IR_VERSION);
  m.set_producer_name("allot");
  m.set_producer_version(ALLOT_VERSION);
  m.set_doc_string(
      "RLoT navigator (Double-Dueling DQN): 7 state aspects -> Q-values of 5 logic blocks");
  onnx::OperatorSetIdProto* opset = m.add_opset_import();
  opset->set_domain("");
  opset->set_version(kOpset);
  const auto names = NavigatorActionNames(w.shape.num_actions);
  std::string joined;
  for (const auto& n : names) joined += (joined.empty() ? "" : ",") + n;
  auto meta = [&](const std::string& k, const std::string& v) {
    auto* p = m.add_metadata_props();
    p->set_key(k);
    p->set_value(v);
  };
  meta("actions", joined);
  meta("input_offset", std::to_string(w.shape.input_offset));
  meta("input_scale", std::to_string(w.shape.input_scale));

  onnx::GraphProto* g = m.mutable_graph();
  g->set_name("navigator");
  AddIo(g->add_input(), "state", w.shape.state_dim);
  AddIo(g->add_output(), "q_values", w.shape.num_actions);
  AddFloatTensor(g, "input_offset", {}, {w.shape.input_offset});
  AddFloatTensor(g, "input_scale", {}, {w.shape.input_scale});
  for (const auto& t : w.tensors) AddFloatTensor(g, t.name, t.shape, t.values);

  AddNode(g, "Sub", {"state", "input_offset"}, "centred");
  AddNode(g, "Div", {"centred", "input_scale"}, "scaled");
  Gemm(g, "scaled", "trunk", "trunk_out");
  AddNode(g, "Relu", {"trunk_out"}, "h");
  Gemm(g, "h", "adv_hidden", "adv_hidden_out");
  AddNode(g, "Relu", {"adv_hidden_out"}, "adv_h");
  Gemm(g, "adv_h", "adv_out", "advantage");
  Gemm(g, "h", "value_hidden", "value_hidden_out");
  AddNode(g, "Relu", {"value_hidden_out"}, "value_h");
  Gemm(g, "value_h", "value_out", "value");
  onnx::NodeProto* mean = AddNode(g, "ReduceMean", {"advantage"}, "advantage_mean");
  onnx::AttributeProto* axes = mean->add_attribute();
  axes->set_name("axes");
  axes->set_type(onnx::AttributeProto::INTS);
  axes->add_ints(1);
  SetInt(mean, "keepdims", 1);
  AddNode(g, "Sub", {"advantage", "advantage_mean"}, "advantage_centred");
  AddNode(g, "Add", {"value", "advantage_centred"}, "q_values");

  std::string out;
  if (!m.SerializeToString(&out)) return Internal("onnx: serializing the navigator failed");
  return out;
}

Status CheckNavigatorOnnx(const std::string& model_bytes, const std::string& source) {
  onnx::ModelProto m;
  if (!m.ParseFromString(model_bytes)) return InvalidArgument(source + ": not an ONNX ModelProto");
  try {
    onnx::checker::check_model(m);
    onnx::shape_inference::InferShapes(m);
  } catch (const std::exception& e) {
    return InvalidArgument(source + ": onnx checker: " + e.what());
  }
  const auto& out = m.graph().output();
  if (out.size() != 1 || out[0].type().tensor_type().elem_type() != onnx::TensorProto::FLOAT) {
    return InvalidArgument(source + ": expected one float output");
  }
  // Shape inference must agree with the declared output: [batch, num_actions].
  for (const auto& vi : m.graph().value_info()) {
    if (vi.name() != "advantage") continue;
    const auto& shp = vi.type().tensor_type().shape();
    if (shp.dim_size() != 2 ||
        shp.dim(1).dim_value() != out[0].type().tensor_type().shape().dim(1).dim_value()) {
      return InvalidArgument(source + ": inferred advantage shape does not match q_values");
    }
  }
  return Status::Ok();
}

Result<std::vector<float>> EvalNavigatorOnnx(const std::string& model_bytes,
                                             std::span<const float> states, int batch) {
  onnx::ModelProto m;
  if (!m.ParseFromString(model_bytes)) return InvalidArgument("onnx: not a ModelProto");
  const onnx::GraphProto& g = m.graph();
  if (g.input_size() != 1 || g.output_size() != 1)
    return InvalidArgument("onnx: expected 1 input, 1 output");
  std::map<std::string, Tensor> env;
  for (const auto& init : g.initializer()) {
    ALLOT_ASSIGN_OR_RETURN(env[init.name()], FromProto(init));
  }
  const int64_t width = g.input(0).type().tensor_type().shape().dim(1).dim_value();
  if (batch <= 0 || static_cast<int64_t>(states.size()) != batch * width) {
    return InvalidArgument("onnx: states do not match [batch, " + std::to_string(width) + "]");
  }
  env[g.input(0).name()] = Tensor{{batch, width}, {states.begin(), states.end()}};

  auto get = [&](const std::string& name) -> Result<const Tensor*> {
    auto it = env.find(name);
    if (it == env.end()) return InvalidArgument("onnx: value '" + name + "' used before defined");
    return &it->second;
  };
  for (const auto& n : g.node()) {
    const std::string& op = n.op_type();
    Tensor out;
    if (op == "Sub" || op == "Div" || op == "Add") {
      ALLOT_ASSIGN_OR_RETURN(const Tensor* a, get(n.input(0)));
      ALLOT_ASSIGN_OR_RETURN(const Tensor* b, get(n.input(1)));
      auto f = op == "Sub"   ? +[](float x, float y) { return x - y; }
               : op == "Div" ? +[](float x, float y) { return x / y; }
                             : +[](float x, float y) { return x + y; };
      ALLOT_ASSIGN_OR_RETURN(out, Broadcast(*a, *b, f, op));
    } else if (op == "Relu") {
      ALLOT_ASSIGN_OR_RETURN(const Tensor* a, get(n.input(0)));
      out = *a;
      for (float& x : out.v) x = std::max(x, 0.0f);
    } else if (op == "Gemm") {
      // Y = A * B^T + C (transB = 1, alpha = beta = 1, as the export writes).
      if (IntAttr(n, "transB", 0) != 1 || IntAttr(n, "transA", 0) != 0) {
        return InvalidArgument("onnx: Gemm '" + n.name() + "': only transB = 1 is supported");
      }
      ALLOT_ASSIGN_OR_RETURN(const Tensor* a, get(n.input(0)));
      ALLOT_ASSIGN_OR_RETURN(const Tensor* b, get(n.input(1)));
      ALLOT_ASSIGN_OR_RETURN(const Tensor* c, get(n.input(2)));
      const int64_t rows = a->dim(0), in = a->dim(1), outs = b->dim(0);
      if (b->dim(1) != in || static_cast<int64_t>(c->v.size()) != outs) {
        return InvalidArgument("onnx: Gemm '" + n.name() + "': shapes do not match");
      }
      out.shape = {rows, outs};
      out.v.resize(static_cast<size_t>(rows * outs));
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t o = 0; o < outs; ++o) {
          float acc = c->v[static_cast<size_t>(o)];
          for (int64_t i = 0; i < in; ++i) {
            acc += a->v[static_cast<size_t>(r * in + i)] * b->v[static_cast<size_t>(o * in + i)];
          }
          out.v[static_cast<size_t>(r * outs + o)] = acc;
        }
      }
    } else if (op == "ReduceMean") {
      ALLOT_ASSIGN_OR_RETURN(const Tensor* a, get(n.input(0)));
      if (a->shape.size() != 2 || IntAttr(n, "keepdims", 1) != 1) {
        return InvalidArgument("onnx: ReduceMean '" + n.name() + "': only rank 2, keepdims");
      }
      const int64_t rows = a->dim(0), cols = a->dim(1);
      out.shape = {rows, 1};
      for (int64_t r = 0; r < rows; ++r) {
        float s = 0;
        for (int64_t j = 0; j < cols; ++j) s += a->v[static_cast<size_t>(r * cols + j)];
        out.v.push_back(s / static_cast<float>(cols));
      }
    } else {
      return InvalidArgument("onnx: op '" + op + "' is not supported by the interpreter");
    }
    env[n.output(0)] = std::move(out);
  }
  ALLOT_ASSIGN_OR_RETURN(const Tensor* q, get(g.output(0).name()));
  return q->v;
}

}  // namespace allot::trainer
