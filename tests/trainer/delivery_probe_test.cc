// Proof of delivery by what the endpoint computes (trainer/grpo/delivery_probe.h): the probe's
// comparison on its own, and the GRPO learner against a real in-process `allot serve` behind a
// scripted proxy that injects the delivery faults seen in the wild (the load acknowledged while
// the previous weights keep serving, the base model served, another adapter served).
#include "trainer/grpo/delivery_probe.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <iostream>
#include <mutex>
#include <set>

#include <nlohmann/json.hpp>

#include "core/metrics_writer.h"
#include "llm/serve/server.h"
#include "models/cpu_threads.h"
#include "models/tokenizer/byte_tokenizer.h"
#include "rollout/env_registry.h"
#include "tests/llm/scripted_server.h"
#include "tests/llm/serve/serve_fixture.h"
#include "tests/models/tiny_model.h"
#include "tests/trainer/tag_env.h"
#include "trainer/grpo/grpo_trainer.h"

namespace allot::trainer::grpo {
namespace {

using nlohmann::json;

TEST(DeliveryProbeTest, TheProbeIsDrawnFromTheSeedAlone) {
  models::ByteTokenizer tok;
  const std::vector<std::string> prompts = {"the first training prompt, long enough",
                                            "a second one, also long enough to cut", "x"};
  DeliveryProbe a(1e-3), b(1e-3);
  ASSERT_TRUE(a.Draw(tok, prompts, 11, 8, 255).ok());
  ASSERT_TRUE(b.Draw(tok, prompts, 11, 8, 255).ok());
  EXPECT_EQ(a.tokens(), b.tokens());
  ASSERT_EQ(a.tokens().size(), 8u);
  // A window of one prompt's tokens.
  bool found = false;
  for (const auto& p : prompts) {
    auto ids = tok.Encode(p, {.parse_special = false, .add_special_tokens = false});
    ASSERT_TRUE(ids.ok());
    found = found || std::search(ids->begin(), ids->end(), a.tokens().begin(), a.tokens().end()) !=
                         ids->end();
  }
  EXPECT_TRUE(found);
  // Other seeds draw other probes (not all ten the same).
  std::set<std::vector<int32_t>> seen;
  for (uint64_t seed = 0; seed < 10; ++seed) {
    DeliveryProbe c(1e-3);
    ASSERT_TRUE(c.Draw(tok, prompts, seed, 8, 255).ok());
    seen.insert(c.tokens());
  }
  EXPECT_GT(seen.size(), 1u);
  // Capped by the model's context; a list with no two-token prompt is an error.
  DeliveryProbe d(1e-3);
  ASSERT_TRUE(d.Draw(tok, prompts, 3, 64, 5).ok());
  EXPECT_EQ(d.tokens().size(), 5u);
  EXPECT_FALSE(d.Draw(tok, {"x", ""}, 3, 8, 255).ok());
}

std::vector<std::optional<llm::TopLogprob>> Served(const std::vector<int32_t>& ids,
                                                   const std::vector<double>& lp) {
  std::vector<std::optional<llm::TopLogprob>> out(1);
  for (size_t i = 0; i < lp.size(); ++i) {
    out.push_back(llm::TopLogprob{.token_id = ids[i + 1], .token = "", .logprob = lp[i]});
  }
  return out;
}

TEST(DeliveryProbeTest, ComparisonFailsAboveTheToleranceNamingUrlAdapterAndSize) {
  models::ByteTokenizer tok;
  DeliveryProbe p(0.01);
  ASSERT_TRUE(p.Draw(tok, {"abcde"}, 1, 5, 255).ok());
  const std::vector<double> learner = {-1.0, -2.0, -3.0, -4.0};
  auto close = p.Compare(Served(p.tokens(), {-1.001, -2.0, -3.002, -4.0}), learner, "http://u:1",
                         "policy-v2");
  ASSERT_TRUE(close.ok()) << close.status().message();
  EXPECT_NEAR(close->max_abs_diff, 0.002, 1e-9);
  EXPECT_NEAR(close->mean_abs_diff, 0.00075, 1e-9);
  auto far =
      p.Compare(Served(p.tokens(), {-1.0, -2.5, -3.0, -4.0}), learner, "http://u:1", "policy-v2");
  ASSERT_FALSE(far.ok());
  const std::string msg = far.status().message();
  EXPECT_NE(msg.find("http://u:1"), std::string::npos) << msg;
  EXPECT_NE(msg.find("policy-v2"), std::string::npos) << msg;
  EXPECT_NE(msg.find("0.125"), std::string::npos) << msg;  // the mean difference
  EXPECT_NE(msg.find("0.5"), std::string::npos) << msg;    // the largest
  // No prompt_logprobs at all: the error says how to train without the check.
  auto none = p.Compare({}, learner, "http://u:1", "policy-v2");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("http://u:1"), std::string::npos);
  EXPECT_NE(none.status().message().find("grpo.delivery_probe.enabled"), std::string::npos);
  // Log-probs of other tokens are not the probe's.
  auto shifted = Served(p.tokens(), {-1.0, -2.0, -3.0, -4.0});
  shifted[2]->token_id += 1;
  EXPECT_FALSE(p.Compare(shifted, learner, "http://u:1", "policy-v2").ok());
}

// The previous weights under the new name, after an update too small for the tolerance (one
// bfloat16 update at lr 1e-5 moved the probe by 0.008-0.03 on an H200, under 0.05): the reply
// matches the learner's log-probs at the previous publish and fails; rounding noise of another
// engine larger than the update does not.
TEST(DeliveryProbeTest, AReplyThatMatchesThePreviousPublishFailsWithinTheTolerance) {
  models::ByteTokenizer tok;
  DeliveryProbe p(0.05);
  ASSERT_TRUE(p.Draw(tok, {"abcdefghi"}, 1, 9, 255).ok());
  std::vector<double> previous, learner;
  for (int i = 0; i < 8; ++i) {
    previous.push_back(-1.0 - 0.5 * i);
    learner.push_back(previous.back() + (i % 2 ? 0.01 : -0.01));  // the update: 0.01 per token
  }
  // Stale: the reply is the previous weights' exactly. Within the tolerance, but it fails.
  auto stale =
      p.Compare(Served(p.tokens(), previous), learner, "http://u:1", "policy-v3", previous);
  ASSERT_FALSE(stale.ok());
  const std::string msg = stale.status().message();
  EXPECT_NE(msg.find("http://u:1"), std::string::npos) << msg;
  EXPECT_NE(msg.find("policy-v3"), std::string::npos) << msg;
  EXPECT_NE(msg.find("previous"), std::string::npos) << msg;
  // Without the previous publish's log-probs (the first publish) only the tolerance judges.
  EXPECT_TRUE(p.Compare(Served(p.tokens(), previous), learner, "http://u:1", "policy-v3").ok());
  // Delivered: the reply is the new weights' exactly, or with an engine's rounding noise
  // (0.02 per token, twice the update) that leaves it no nearer the previous weights.
  EXPECT_TRUE(
      p.Compare(Served(p.tokens(), learner), learner, "http://u:1", "policy-v3", previous).ok());
  std::vector<double> noisy;
  for (int i = 0; i < 8; ++i) noisy.push_back(learner[i] + (i % 4 < 2 ? 0.02 : -0.02));
  auto ok = p.Compare(Served(p.tokens(), noisy), learner, "http://u:1", "policy-v3", previous);
  EXPECT_TRUE(ok.ok()) << ok.status().message();
  // An update that moved nothing: both distances tie and the reply passes.
  EXPECT_TRUE(
      p.Compare(Served(p.tokens(), previous), previous, "http://u:1", "policy-v3", previous).ok());
}

// A real `allot serve` behind a proxy. From version `first_fault` on, the proxy can acknowledge
// loads without making them and answer completions for the new name with other
// weights, as the delivery faults do; it lists the acknowledged names, so the name check of
// adapter_publisher.h passes and only what the endpoint computes can tell.
enum class Fault {
  kNone,
  kPreviousWeights,   // the new name answers with the version before it
  kBaseModel,         // the new name answers with the base model
  kOtherAdapter,      // the new name answers with an unrelated adapter
  kNoPromptLogprobs,  // an engine that does not return prompt_logprobs
};

class FaultyEndpoint {
 public:
  FaultyEndpoint(Fault fault, bool pass_sha256, uint64_t first_fault = 2)
      : fault_(fault), pass_sha256_(pass_sha256), first_fault_(first_fault) {
    model_dir_ = llm::serve::testing::WriteServableTinyModel("delivery_tiny", 7);
    llm::serve::ServeConfig c;
    c.model = model_dir_;
    c.served_model_name = "tiny";
    c.port = 0;
    if (fault == Fault::kOtherAdapter) {
      c.adapters = {"other=" + llm::serve::testing::WriteAdapter(model_dir_, "delivery_other",
                                                                 /*zero_b=*/false)};
    }
    auto s = llm::serve::Server::Create(c);
    EXPECT_TRUE(s.ok()) << s.status().message();
    server_ = std::move(*s);
    auto port = server_->Start();
    EXPECT_TRUE(port.ok());
    port_ = *port;
    proxy_.SetHandler([this](const llm::testing::ServerRequest& req) { return Handle(req); });
  }
  ~FaultyEndpoint() { server_->Stop(); }

  std::string url() const { return proxy_.url(); }
  const std::string& model_dir() const { return model_dir_; }
  int probes() const { return probes_.load(); }

 private:
  static uint64_t Version(const std::string& name) {
    const std::string head = "policy-v";
    if (name.rfind(head, 0) != 0) return 0;
    return std::strtoull(name.c_str() + head.size(), nullptr, 10);
  }

  llm::testing::Reply Forward(const llm::testing::ServerRequest& req, const std::string& body) {
    llm::serve::testing::Reply r = req.method == "GET"
                                       ? llm::serve::testing::Get(port_, req.path)
                                       : llm::serve::testing::Post(port_, req.path, body);
    llm::testing::Reply out = llm::testing::Reply::Json(r.body, r.status);
    if (!r.json.is_object()) out.content_type = "text/plain";
    return out;
  }

  llm::testing::Reply Handle(const llm::testing::ServerRequest& req) {
    const bool faulty = fault_ != Fault::kNone && fault_ != Fault::kNoPromptLogprobs;
    json body = json::parse(req.body, nullptr, false);
    if (req.path == "/v1/load_lora_adapter" && faulty &&
        Version(body.value("lora_name", "")) >= first_fault_) {
      std::lock_guard lock(mu_);
      acknowledged_.insert(body["lora_name"].get<std::string>());
      return llm::testing::Reply::Json("Success: LoRA adapter added.");
    }
    if (req.path == "/v1/unload_lora_adapter" && faulty) {
      std::lock_guard lock(mu_);
      if (acknowledged_.erase(body.value("lora_name", "")) > 0) {
        return llm::testing::Reply::Json("Success: LoRA adapter removed.");
      }
    }
    if (req.path == "/v1/models") {
      llm::testing::Reply r = Forward(req, req.body);
      json list = json::parse(r.body, nullptr, false);
      std::lock_guard lock(mu_);
      for (const auto& name : acknowledged_) {
        list["data"].push_back({{"id", name}, {"object", "model"}, {"parent", "tiny"}});
      }
      r.body = list.dump();
      return r;
    }
    if (req.path == "/v1/completions" && body.is_object()) {
      const std::string model = body.value("model", "");
      const bool probe = body.contains("prompt_logprobs");
      if (probe) ++probes_;
      bool ack = false;
      {
        std::lock_guard lock(mu_);
        ack = acknowledged_.count(model) > 0;
      }
      if (ack && fault_ == Fault::kPreviousWeights) {
        body["model"] = "policy-v" + std::to_string(Version(model) - 1);
        // The previous version may be one the proxy acknowledged itself: the last real one.
        while (true) {
          std::lock_guard lock(mu_);
          if (acknowledged_.count(body["model"].get<std::string>()) == 0) break;
          body["model"] = "policy-v" + std::to_string(Version(body["model"]) - 1);
        }
      } else if (ack && fault_ == Fault::kBaseModel) {
        body["model"] = "tiny";
      } else if (ack && fault_ == Fault::kOtherAdapter) {
        body["model"] = "other";
      }
      llm::testing::Reply r = Forward(req, body.dump());
      json reply = json::parse(r.body, nullptr, false);
      if (reply.is_object()) {
        if (ack) reply["model"] = model;  // the name the learner asked for, as the fault says
        if (!pass_sha256_) reply.erase("adapter_sha256");
        if (fault_ == Fault::kNoPromptLogprobs && reply.contains("choices")) {
          for (auto& c : reply["choices"]) c.erase("prompt_logprobs");
        }
        r.body = reply.dump();
      }
      return r;
    }
    return Forward(req, req.body);
  }

  Fault fault_;
  bool pass_sha256_;
  uint64_t first_fault_;
  std::string model_dir_;
  std::unique_ptr<llm::serve::Server> server_;
  int port_ = 0;
  llm::testing::ScriptedServer proxy_;
  std::mutex mu_;
  std::set<std::string> acknowledged_;
  std::atomic<int> probes_{0};
};

GrpoRunOptions RunOptions(const FaultyEndpoint& ep, const std::string& run_dir, int steps) {
  GrpoRunOptions o;
  o.grpo.group_size = 4;
  o.grpo.prompts_per_step = 2;
  o.grpo.lr = 2e-2;
  o.grpo.max_tokens = 8;
  o.grpo.loss_aggregation = "token_mean";
  o.grpo.lora.r = 8;
  o.grpo.lora.lora_alpha = 16;
  // No LoRA dropout: the learner's log-probs in the update are then exactly those of the weights
  // that sampled, and delivery/rollout_logprob_abs_diff is float rounding alone.
  o.grpo.lora.lora_dropout = 0.0;
  o.grpo.sync_timeout_s = 10;
  o.grpo.rollout_timeout_s = 60;
  o.total_steps = steps;
  o.seed = 5;
  o.model_dir = ep.model_dir();
  o.env = testing::kTagEnvName;
  o.env_config = testing::TagEnvConfig(ep.url(), "tiny");
  o.prompts = {R"({"prompt": "<question_level>L"})"};
  o.run_dir = run_dir;
  o.rollout.in_process_workers = 1;
  o.rollout.worker.capacity = 8;
  o.rollout.worker.threads = 4;
  llm::EndpointConfig e;
  e.name = "policy";
  e.base_url = ep.url();
  e.model = "tiny";
  e.limits.deadline_s = 30;
  o.endpoints = {e};
  return o;
}

struct Outcome {
  Status status;
  int steps_ended = 0;
  std::vector<json> metrics;
};

Outcome Train(const FaultyEndpoint& ep, const std::string& name, int steps,
              bool probe_enabled = true) {
  models::SetCpuThreads(1);
  testing::RegisterTagEnv(rollout::EnvRegistry::Global());
  const std::string run = models::testing::MakeTempDir(name);
  GrpoRunOptions o = RunOptions(ep, run, steps);
  o.grpo.delivery_probe.enabled = probe_enabled;
  Outcome out;
  o.on_step_end = [&out](int64_t) { ++out.steps_ended; };
  auto trainer = GrpoTrainer::Create(o);
  EXPECT_TRUE(trainer.ok()) << trainer.status().message();
  if (!trainer.ok()) return out;
  auto metrics = MetricsWriter::Open(run + "/metrics.jsonl", "");
  EXPECT_TRUE(metrics.ok());
  auto summary = (*trainer)->Run(metrics->get(), nullptr);
  out.status = summary.status();
  metrics->reset();
  std::ifstream jsonl(run + "/metrics.jsonl");
  for (std::string line; std::getline(jsonl, line);) out.metrics.push_back(json::parse(line));
  return out;
}

// The control for the fault tests below: through the same proxy, faithfully, the probe agrees
// with the learner to float32 rounding, and each update moves the probe by far more than the
// tolerance (so a fault that keeps the previous weights is visible to it).
TEST(DeliveryProbeIntegrationTest, AFaithfulEndpointPassesAndTheDifferencesAreLogged) {
  FaultyEndpoint ep(Fault::kNone, /*pass_sha256=*/true);
  Outcome out = Train(ep, "delivery_ok", 3);
  ASSERT_TRUE(out.status.ok()) << out.status.message();
  EXPECT_EQ(out.steps_ended, 3);
  EXPECT_EQ(ep.probes(), 4);  // v1 before training, then one per step (each step trains)
  ASSERT_EQ(out.metrics.size(), 3u);
  for (const json& m : out.metrics) {
    ASSERT_TRUE(m.contains("delivery/probe_max_abs_diff")) << m;
    EXPECT_LT(m["delivery/probe_max_abs_diff"].get<double>(), 1e-4) << m;
    EXPECT_LE(m["delivery/probe_mean_abs_diff"].get<double>(),
              m["delivery/probe_max_abs_diff"].get<double>());
    ASSERT_TRUE(m.contains("delivery/probe_step_change")) << m;
    EXPECT_GT(m["delivery/probe_step_change"].get<double>(), kDefaultProbeToleranceFloat32) << m;
    // Rollouts are sampled by the version the update starts from: the same weights.
    ASSERT_TRUE(m.contains("delivery/rollout_logprob_abs_diff")) << m;
    EXPECT_LT(m["delivery/rollout_logprob_abs_diff"].get<double>(), 1e-4) << m;
  }
}

// Version v is published at the end of step v - 2 (v1 before training): a fault from v2 on must
// end the run in step 0, with no step ended.
void ExpectFailsInTheStepOfThePublish(const Outcome& out, const FaultyEndpoint& ep,
                                      const std::string& what, uint64_t version = 2) {
  ASSERT_FALSE(out.status.ok());
  EXPECT_EQ(out.steps_ended, static_cast<int>(version) - 2)
      << "the run did not fail in the step that published the faulty version";
  const std::string msg = out.status.message();
  std::cout << "run failed as it should: " << msg << "\n";
  EXPECT_NE(msg.find(ep.url()), std::string::npos) << msg;
  EXPECT_NE(msg.find("policy-v" + std::to_string(version)), std::string::npos) << msg;
  EXPECT_NE(msg.find(what), std::string::npos) << msg;
}

// From v3 on, so that the previous weights (v2, trained once) are not the base model's (v1's
// fresh adapter is the identity): the run ends in step 1, which published v3.
TEST(DeliveryProbeIntegrationTest, PreviousWeightsStillServedFailTheStepOfThePublish) {
  FaultyEndpoint ep(Fault::kPreviousWeights, /*pass_sha256=*/false, /*first_fault=*/3);
  ExpectFailsInTheStepOfThePublish(Train(ep, "delivery_prev", 3), ep, "differ from the learner's",
                                   3);
}

TEST(DeliveryProbeIntegrationTest, TheBaseModelServedFailsTheStepOfThePublish) {
  FaultyEndpoint ep(Fault::kBaseModel, /*pass_sha256=*/false);
  ExpectFailsInTheStepOfThePublish(Train(ep, "delivery_base", 3), ep, "differ from the learner's");
}

TEST(DeliveryProbeIntegrationTest, AnotherAdapterServedFailsTheStepOfThePublish) {
  FaultyEndpoint ep(Fault::kOtherAdapter, /*pass_sha256=*/false);
  ExpectFailsInTheStepOfThePublish(Train(ep, "delivery_other", 3), ep, "differ from the learner's");
}

// allot serve names the adapter that decoded by its file's sha256: the previous version's hash
// is caught before the log-probs are compared.
TEST(DeliveryProbeIntegrationTest, TheReportedAdapterHashMustBeThePublishedFiles) {
  FaultyEndpoint ep(Fault::kPreviousWeights, /*pass_sha256=*/true);
  ExpectFailsInTheStepOfThePublish(Train(ep, "delivery_sha", 3), ep, "sha256");
}

// Without the probe the same fault passes every name check and training goes on; the per-step
// rollout-vs-learner difference is where it shows: float rounding while the endpoint samples
// with the learner's weights, then a jump in the step whose rollouts the stale weights sampled.
TEST(DeliveryProbeIntegrationTest, WithoutTheProbeTheRolloutDifferenceJumpsAtTheFault) {
  FaultyEndpoint ep(Fault::kPreviousWeights, /*pass_sha256=*/false, /*first_fault=*/3);
  Outcome out = Train(ep, "delivery_prev_unprobed", 3, /*probe_enabled=*/false);
  ASSERT_TRUE(out.status.ok()) << out.status.message();
  ASSERT_EQ(out.metrics.size(), 3u);
  auto diff = [&](size_t step) {
    return out.metrics[step].value("delivery/rollout_logprob_abs_diff", -1.0);
  };
  EXPECT_GE(diff(0), 0.0);
  EXPECT_LT(diff(0), 1e-4);  // v1 sampled, v1 trained
  EXPECT_LT(diff(1), 1e-4);  // v2 sampled, v2 trained
  EXPECT_GT(diff(2), 1e-2);  // "v3" sampled by v2's weights, v3 trained
  std::cout << "rollout |log-prob diff| per step: " << diff(0) << " " << diff(1) << " " << diff(2)
            << "\n";
}

TEST(DeliveryProbeIntegrationTest, AnEndpointWithoutPromptLogprobsFailsUnlessTheProbeIsOff) {
  FaultyEndpoint ep(Fault::kNoPromptLogprobs, /*pass_sha256=*/false);
  Outcome out = Train(ep, "delivery_noplp", 2);
  ASSERT_FALSE(out.status.ok());
  EXPECT_EQ(out.steps_ended, 0);
  EXPECT_NE(out.status.message().find(ep.url()), std::string::npos) << out.status.message();
  EXPECT_NE(out.status.message().find("grpo.delivery_probe.enabled"), std::string::npos)
      << out.status.message();
  Outcome off = Train(ep, "delivery_noplp_off", 2, /*probe_enabled=*/false);
  ASSERT_TRUE(off.status.ok()) << off.status.message();
  EXPECT_EQ(off.steps_ended, 2);
  ASSERT_EQ(off.metrics.size(), 2u);
  EXPECT_FALSE(off.metrics[0].contains("delivery/probe_mean_abs_diff"));
}

TEST(DeliveryProbeConfigTest, AToleranceWithTheProbeOffIsAnErrorNamingTheKey) {
  GrpoConfig g;
  g.delivery_probe.enabled = false;
  g.delivery_probe.tolerance = 0.1;
  Status s = CheckGrpoConfig(g);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("grpo.delivery_probe.tolerance"), std::string::npos);
  g.delivery_probe.enabled = true;
  EXPECT_TRUE(CheckGrpoConfig(g).ok());
}

}  // namespace
}  // namespace allot::trainer::grpo
