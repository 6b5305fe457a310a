#include "trainer/sft/sft_trainer.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "core/checkpoint_store.h"
#include "core/safetensors.h"
#include "models/cpu_threads.h"
#include "models/hf_config.h"
#include "models/peft.h"
#include "models/weights_io.h"
#include "trainer/comm/communicator.h"
#include "trainer/export/policy_checkpoint.h"
#include "trainer/export/policy_export.h"
#include "trainer/optim/adamw.h"
#include "trainer/optim/grad_accumulation.h"
#include "trainer/optim/grad_clip.h"
#include "trainer/optim/multi_tensor_adamw.h"
#include "trainer/optim/optimizer_state.h"
#include "trainer/optim/zero_adamw.h"
#include "trainer/sft/packing.h"
#include "trainer/sft/sft_loss.h"

namespace allot::trainer {
namespace fs = std::filesystem;

namespace {

constexpr const char* kWeightsFile = "trainable.safetensors";
constexpr const char* kOptimizerFile = "optimizer.safetensors";
constexpr const char* kRngFile = "rng.bin";
constexpr const char* kStateFile = "trainer_state.json";

Result<std::shared_ptr<models::CausalLMImpl>> BuildModel(const SftRunOptions& o) {
  if (o.sft.init == "pretrained") return models::CausalLMImpl::Load(o.model);
  ALLOT_ASSIGN_OR_RETURN(models::TransformerConfig config,
                         models::LoadTransformerConfig(o.model.path));
  at::ScalarType dtype = torch::kFloat;  // fresh weights train in float32 unless told otherwise
  if (o.model.dtype != "auto") {
    ALLOT_ASSIGN_OR_RETURN(dtype, models::ParseDtypeName(o.model.dtype));
  }
  torch::manual_seed(static_cast<uint64_t>(o.sft.init_seed));
  auto options = torch::TensorOptions().dtype(dtype).device(torch::Device(o.model.device));
  auto model = std::make_shared<models::CausalLMImpl>(config, options);
  // transformers' _init_weights for Qwen2/Llama: every matrix (embeddings included) ~ N(0,
  // initializer_range), biases 0, norms 1. LibTorch's module defaults (N(0, 1) embeddings) give
  // a tied model logits of size ~sqrt(hidden) and a first loss far above ln(vocab).
  torch::NoGradGuard no_grad;
  for (auto& item : model->named_parameters()) {
    const std::string& name = item.key();
    if (item.value().dim() >= 2) {
      item.value().normal_(0.0, o.sft.init_std);
    } else if (name.size() > 5 && name.compare(name.size() - 5, 5, ".bias") == 0) {
      item.value().zero_();  // Qwen2's q/k/v biases
    }
  }
  ALLOT_RETURN_IF_ERROR(
      model->SetGradientCheckpointing(o.model.gradient_checkpointing, o.model.checkpoint_layers));
  return model;
}

std::string GeneratorBytes() {
  auto gen = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(gen.mutex());
  at::Tensor s = gen.get_state();
  return std::string(static_cast<const char*>(s.data_ptr()), s.nbytes());
}

void SetGeneratorBytes(const std::string& bytes) {
  auto gen = at::detail::getDefaultCPUGenerator();
  at::Tensor s = torch::empty({static_cast<int64_t>(bytes.size())}, torch::kUInt8);
  std::memcpy(s.data_ptr(), bytes.data(), bytes.size());
  std::lock_guard<std::mutex> lock(gen.mutex());
  gen.set_state(s);
}

}  // namespace

Status ValidateSftConfig(const SftConfig& c) {
  ALLOT_RETURN_IF_ERROR(ValidateOptimConfig(c.optim));
  if (!c.lora.enabled) {
    models::LoraConfig off = SftDefaultLora();
    if (c.lora.r != off.r || c.lora.lora_alpha != off.lora_alpha ||
        c.lora.lora_dropout != off.lora_dropout || c.lora.use_rslora != off.use_rslora ||
        c.lora.target_modules != off.target_modules || !c.lora.init_from.empty() ||
        c.lora.seed != off.seed) {
      return InvalidArgument(
          "sft.lora: keys are set but sft.lora.enabled is false, so they have "
          "no effect (set enabled: true or remove them)");
    }
  }
  if (c.init == "pretrained" && c.init_seed != 0) {
    return InvalidArgument("sft.init_seed has no effect with sft.init: pretrained");
  }
  if (c.init == "pretrained" && c.init_std != SftConfig().init_std) {
    return InvalidArgument("sft.init_std has no effect with sft.init: pretrained");
  }
  if (c.init == "random" && c.lora.enabled) {
    return InvalidArgument(
        "sft.lora.enabled with sft.init: random would train an adapter on "
        "random weights; train all weights from scratch instead");
  }
  if (c.format == "prompt_completion") {
    models::ChatTemplateConfig def;
    if (c.chat_template.kind != def.kind || c.chat_template.default_system != def.default_system ||
        c.chat_template.enable_thinking != def.enable_thinking) {
      return InvalidArgument("sft.chat_template has no effect with sft.format: prompt_completion");
    }
  }
  return Status::Ok();
}

SftTrainer::~SftTrainer() = default;

Result<std::unique_ptr<SftTrainer>> SftTrainer::Create(const SftRunOptions& options) {
  ALLOT_RETURN_IF_ERROR(ValidateSftConfig(options.sft));
  if (options.zero_stage < 0 || options.zero_stage > 2) {
    return InvalidArgument("trainer.zero_stage: " + std::to_string(options.zero_stage) +
                           " (0, 1 or 2)");
  }
  if (options.zero_stage > 0 && options.sft.lora.enabled) {
    return InvalidArgument(
        "trainer.zero_stage: ZeRO shards full-parameter training; with sft.lora.enabled the "
        "adapter's optimizer state is small (set trainer.zero_stage: 0)");
  }
  std::unique_ptr<SftTrainer> t(new SftTrainer());
  t->options_ = options;
  const SftConfig& c = options.sft;
  if (c.threads > 0) models::SetCpuThreads(static_cast<int>(c.threads));
  if (options.model.path.empty()) return InvalidArgument("model.path: no model directory given");

  ALLOT_ASSIGN_OR_RETURN(t->model_, BuildModel(options));
  if (c.lora.enabled) {
    ALLOT_RETURN_IF_ERROR(models::ApplyLoraConfig(*t->model_, c.lora).Annotate("sft.lora"));
  }
  t->model_->train();

  t->tokenizer_dir_ =
      options.model.tokenizer.empty() ? options.model.path : options.model.tokenizer;
  ALLOT_ASSIGN_OR_RETURN(t->tokenizer_, models::LoadTokenizer(t->tokenizer_dir_));

  SftEncoder encoder;
  encoder.tokenizer = t->tokenizer_.get();
  encoder.config = &t->options_.sft;
  encoder.chat_options.default_system = c.chat_template.default_system;
  encoder.chat_options.enable_thinking = c.chat_template.enable_thinking;
  if (c.format != "prompt_completion") {
    const std::string dir = fs::is_directory(t->tokenizer_dir_)
                                ? t->tokenizer_dir_
                                : fs::path(t->tokenizer_dir_).parent_path().string();
    auto kind = models::ResolveChatTemplate(c.chat_template, dir);
    if (kind.ok()) {
      encoder.chat_kind = *kind;
    } else if (c.format == "chat") {
      return kind.status().Annotate("sft.chat_template");
    } else {
      encoder.chat_error = kind.status().Annotate("sft.chat_template");
    }
  }
  const auto& eos = t->model_->config().eos_token_ids;
  if (!eos.empty()) {
    encoder.eos_id = static_cast<int32_t>(eos.front());
  } else {
    encoder.eos_id = t->tokenizer_->TokenId("<|endoftext|>");
  }
  ALLOT_ASSIGN_OR_RETURN(SftDataset ds, LoadSftDataset(encoder));
  t->dataset_ = std::make_unique<SftDataset>(std::move(ds));
  ALLOT_ASSIGN_OR_RETURN(
      SftBatcher batcher,
      SftBatcher::Create(&t->dataset_->examples, c.batch_size, c.optim.grad_accum, c.bucket_window,
                         c.shuffle, options.seed));
  t->batcher_ = std::make_unique<SftBatcher>(std::move(batcher));
  if (c.epochs > 0) t->options_.total_steps = c.epochs * t->batcher_->steps_per_epoch();

  if (options.comm != nullptr && options.comm->distributed()) {
    // Every rank starts from rank 0's trainable weights (frozen ones come from the same files).
    std::vector<at::Tensor> params;
    for (auto& [name, p] : t->TrainableParameters()) params.push_back(p);
    ALLOT_RETURN_IF_ERROR(options.comm->BroadcastParameters(params));
  }
  if (options.zero_stage > 0 && options.comm != nullptr && options.comm->distributed()) {
    ALLOT_ASSIGN_OR_RETURN(t->zero_, ZeroAdamW::Create(c.optim, t->TrainableParameters(),
                                                       options.comm, options.zero_stage));
  } else {
    ALLOT_ASSIGN_OR_RETURN(t->optimizer_, MakeAdamW(c.optim, t->TrainableParameters()));
  }
  ALLOT_ASSIGN_OR_RETURN(LrSchedule schedule, LrSchedule::Create(c.optim, t->options_.total_steps));
  t->schedule_ = std::make_unique<LrSchedule>(schedule);
  torch::manual_seed(options.seed);  // LoRA dropout draws from the default generator
  return t;
}

std::vector<std::pair<std::string, at::Tensor>> SftTrainer::TrainableParameters() const {
  std::vector<std::pair<std::string, at::Tensor>> out;
  for (const auto& item : model_->named_parameters(/*recurse=*/true)) {
    if (item.value().requires_grad()) out.emplace_back(item.key(), item.value());
  }
  return out;
}

torch::optim::AdamW& SftTrainer::adamw() { return zero_ ? zero_->optimizer() : *optimizer_; }

bool SftTrainer::is_rank0() const { return options_.comm == nullptr || options_.comm->is_rank0(); }

Result<SftStepStats> SftTrainer::Step() {
  const auto start = std::chrono::steady_clock::now();
  comm::Communicator* comm =
      options_.comm != nullptr && options_.comm->distributed() ? options_.comm : nullptr;
  const size_t rank = comm != nullptr ? static_cast<size_t>(comm->rank()) : 0;
  const size_t world = comm != nullptr ? static_cast<size_t>(comm->world_size()) : 1;
  SftStepStats stats;
  stats.cursor = batcher_->CursorAt(step_);
  std::vector<SftMicroBatch> micro;
  int64_t step_tokens = 0;
  for (const auto& indices : batcher_->StepIndices(step_)) {
    // This rank's shard: every world-th example of the micro-batch (all of it on one rank).
    std::vector<size_t> mine;
    for (size_t i = rank; i < indices.size(); i += world) mine.push_back(indices[i]);
    if (mine.empty()) continue;
    micro.push_back(batcher_->Collate(mine));
    step_tokens += micro.back().loss_tokens;
    stats.tokens += micro.back().tokens;
  }
  // Token weighting over ranks: each rank divides by the loss tokens of the whole step.
  std::vector<double> counts = {static_cast<double>(step_tokens),
                                static_cast<double>(stats.tokens)};
  if (comm != nullptr) ALLOT_RETURN_IF_ERROR(comm->AllReduceScalars(counts, /*mean=*/false));
  stats.loss_tokens = static_cast<int64_t>(counts[0]);
  stats.tokens = static_cast<int64_t>(counts[1]);
  TokenAccumulator acc(stats.loss_tokens);
  if (zero_) {
    zero_->ZeroGrad();
  } else {
    optimizer_->zero_grad();
  }
  for (const auto& mb : micro) {
    const int64_t chunk = options_.model.logprob_chunk_tokens;
    acc.Scale(options_.sft.packing ? PackedCompletionLossSum(*model_, mb, chunk)
                                   : CompletionLossSum(*model_, mb, chunk))
        .backward();
  }
  stats.loss = acc.mean_loss();
  if (zero_) {
    ALLOT_RETURN_IF_ERROR(zero_->ReduceGradients());
  } else if (comm != nullptr) {
    std::vector<at::Tensor> params;
    for (auto& [name, p] : TrainableParameters()) params.push_back(p);
    ALLOT_RETURN_IF_ERROR(comm->SumGradients(params));
  }
  if (comm != nullptr) {
    std::vector<double> loss = {stats.loss};
    ALLOT_RETURN_IF_ERROR(comm->AllReduceScalars(loss, /*mean=*/false));
    stats.loss = loss[0];
  }
  if (!std::isfinite(stats.loss)) {
    return Internal("sft: non-finite loss at step " + std::to_string(step_ + 1));
  }
  if (zero_) {
    ALLOT_ASSIGN_OR_RETURN(stats.grad_norm, zero_->ClipGradNorm(options_.sft.optim.max_grad_norm));
  } else {
    stats.grad_norm =
        ClipGradNorm(OptimizerParameters(*optimizer_), options_.sft.optim.max_grad_norm);
  }
  stats.lr = schedule_->Apply(adamw(), step_);
  if (zero_) {
    ALLOT_RETURN_IF_ERROR(zero_->Step());  // this rank's shard, then the all-gather
  } else {
    StepAdamW(*optimizer_);
  }
  ++step_;
  stats.step = step_;
  stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return stats;
}

Result<SftRunSummary> SftTrainer::Run(MetricsWriter* metrics, ProgressBar* bar) {
  SftRunSummary summary;
  double seconds = 0;
  int64_t tokens = 0;
  if (bar != nullptr) bar->Start(step_);
  while (step_ < options_.total_steps) {
    ALLOT_ASSIGN_OR_RETURN(SftStepStats s, Step());
    if (summary.steps == 0) summary.first_loss = s.loss;
    summary.last_loss = s.loss;
    ++summary.steps;
    seconds += s.seconds;
    tokens += s.tokens;
    if (metrics != nullptr &&
        (s.step % options_.log_every == 0 || s.step == options_.total_steps)) {
      const double tps = s.seconds > 0 ? static_cast<double>(s.tokens) / s.seconds : 0.0;
      ALLOT_RETURN_IF_ERROR(
          metrics->Log(s.step, {{"loss", s.loss},
                                {"lr", s.lr},
                                {"grad_norm", s.grad_norm},
                                {"tokens_per_s", tps},
                                {"tokens", static_cast<double>(s.tokens)},
                                {"loss_tokens", static_cast<double>(s.loss_tokens)},
                                {"epoch", static_cast<double>(s.cursor.epoch)},
                                {"step_time_s", s.seconds}}));
    }
    if (bar != nullptr) bar->Update(s.step);
    // With ZeRO every rank takes part: rank 0 gathers the optimizer shards.
    if (!options_.checkpoint_dir.empty() && (is_rank0() || zero_ != nullptr) &&
        (s.step % options_.checkpoint_every == 0 || s.step == options_.total_steps)) {
      ALLOT_RETURN_IF_ERROR(SaveCheckpoint().status());
    }
  }
  if (bar != nullptr) bar->Finish();
  summary.tokens_per_s = seconds > 0 ? static_cast<double>(tokens) / seconds : 0.0;
  return summary;
}

Result<std::string> SftTrainer::SaveCheckpoint() {
  if (options_.checkpoint_dir.empty()) return InvalidArgument("sft: no checkpoint directory");
  std::vector<std::string> shards;  // ZeRO: every rank's optimizer state, on rank 0
  if (zero_) {
    ALLOT_ASSIGN_OR_RETURN(std::string mine, SerializeAdamWState(adamw(), step_));
    ALLOT_RETURN_IF_ERROR(options_.comm->GatherBytes(mine, &shards));
    if (!is_rank0()) return std::string();
  }
  CheckpointStore store(options_.checkpoint_dir, options_.keep_last);
  return store.Save(step_, [&](const std::string& dir) -> Status {
    models::NamedTensors weights;
    for (auto& [name, p] : TrainableParameters()) weights.emplace_back(name, p.detach());
    ALLOT_RETURN_IF_ERROR(models::WriteTensors(dir + "/" + kWeightsFile, weights));
    // policy/: what `allot export` reads (trainer/export/policy_checkpoint.h).
    ALLOT_RETURN_IF_ERROR(
        SavePolicyCheckpoint(*model_, dir, options_.model.path, options_.model.tokenizer));
    for (size_t r = 0; r < shards.size(); ++r) {
      const int n = static_cast<int>(shards.size());
      ALLOT_RETURN_IF_ERROR(
          WriteFileAtomic(dir + "/" + ZeroStateFileName(static_cast<int>(r), n), shards[r]));
    }
    if (!zero_) {
      ALLOT_ASSIGN_OR_RETURN(std::string opt, SerializeAdamWState(*optimizer_, step_));
      ALLOT_RETURN_IF_ERROR(WriteFileAtomic(dir + "/" + kOptimizerFile, opt));
    }
    ALLOT_RETURN_IF_ERROR(WriteFileAtomic(dir + "/" + kRngFile, GeneratorBytes()));
    const SftCursor cursor = batcher_->CursorAt(step_);
    nlohmann::json state = {{"step", step_},
                            {"epoch", cursor.epoch},
                            {"step_in_epoch", cursor.step_in_epoch},
                            {"seed", options_.seed},
                            {"data", dataset_->path},
                            {"examples", dataset_->examples.size()},
                            {"mode", lora() ? "lora" : "full"}};
    return WriteFileAtomic(dir + "/" + kStateFile, state.dump(2) + "\n");
  });
}

Result<int64_t> SftTrainer::Resume() {
  if (options_.checkpoint_dir.empty()) return InvalidArgument("sft: no checkpoint directory");
  CheckpointStore store(options_.checkpoint_dir, options_.keep_last);
  std::vector<std::string> skipped;
  ALLOT_ASSIGN_OR_RETURN(CheckpointInfo info, store.LoadLatest(&skipped));
  const std::string dir = info.path;
  std::string text;
  ALLOT_RETURN_IF_ERROR(ReadFile(dir + "/" + kStateFile, &text));
  nlohmann::json state;
  int64_t step = 0;
  try {
    state = nlohmann::json::parse(text);
    step = state.at("step").get<int64_t>();
    if (state.at("examples").get<size_t>() != dataset_->examples.size() ||
        state.at("mode").get<std::string>() != (lora() ? "lora" : "full") ||
        state.at("seed").get<uint64_t>() != options_.seed) {
      return InvalidArgument(dir + "/" + kStateFile +
                             ": the checkpoint was written for other data, seed or mode (lora "
                             "vs full); its data cursor would not apply");
    }
  } catch (const nlohmann::json::exception& e) {
    return DataLoss(dir + "/" + kStateFile + ": " + e.what());
  }
  // Weights: copied in place, so the optimizer keeps pointing at the same tensors.
  const std::string wpath = dir + "/" + kWeightsFile;
  ALLOT_ASSIGN_OR_RETURN(auto file, safetensors::File::Open(wpath));
  auto params = TrainableParameters();
  if (file->tensors().size() != params.size()) {
    return DataLoss(wpath + ": holds " + std::to_string(file->tensors().size()) +
                    " tensors, the model trains " + std::to_string(params.size()));
  }
  {
    torch::NoGradGuard no_grad;
    for (auto& [name, p] : params) {
      const safetensors::TensorInfo* info_t = file->Find(name);
      if (info_t == nullptr) return DataLoss(wpath + ": no tensor " + name);
      ALLOT_ASSIGN_OR_RETURN(at::Tensor v, models::ReadTensor(*file, *info_t));
      if (!v.sizes().equals(p.sizes())) return DataLoss(wpath + ": wrong shape for " + name);
      p.copy_(v);
    }
  }
  // Unsharded, or this rank's ZeRO shard (refused when written by another world size).
  ALLOT_ASSIGN_OR_RETURN(const std::string opt_path,
                         OptimizerStateFile(dir, zero_ ? options_.comm->rank() : 0,
                                            zero_ ? options_.comm->world_size() : 0));
  std::string opt;
  ALLOT_RETURN_IF_ERROR(ReadFile(opt_path, &opt));
  ALLOT_ASSIGN_OR_RETURN(int64_t sched_step, RestoreAdamWState(adamw(), opt, opt_path));
  if (sched_step != step)
    return DataLoss(dir + ": optimizer and trainer state disagree on the step");
  std::string rng;
  ALLOT_RETURN_IF_ERROR(ReadFile(dir + "/" + kRngFile, &rng));
  SetGeneratorBytes(rng);
  step_ = step;
  return step_;
}

Status SftTrainer::SaveModel(const std::string& dir) const {
  if (lora()) return models::SaveAdapter(*model_, dir, options_.model.path);
  ALLOT_RETURN_IF_ERROR(model_->SaveMerged(dir));
  // The tokenizer's files travel with the weights, so the directory is servable as it is.
  const fs::path src = fs::is_directory(tokenizer_dir_) ? fs::path(tokenizer_dir_)
                                                        : fs::path(tokenizer_dir_).parent_path();
  for (const std::string& name : TokenizerFileNames()) {
    std::error_code ec;
    if (!fs::exists(src / name, ec)) continue;
    fs::copy_file(src / name, fs::path(dir) / name, fs::copy_options::overwrite_existing, ec);
    if (ec)
      return Internal("copying " + (src / name).string() + " to " + dir + ": " + ec.message());
  }
  return Status::Ok();
}

}  // namespace allot::trainer
