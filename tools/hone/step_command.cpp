#include "hone/step_command.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <regex>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "hone/error.h"
#include "hone/format.h"
#include "hone/registry.h"
#include "hone/tuner.h"
#include "model/decode_step.h"
#if HONE_WITH_CUDA
#include "hone/bf16.h"
#include "hone/chain_tactic.h"
#include "hone/chain_tune.h"
#include "hone/dispatcher.h"
#include "hone/npy.h"
#include "hone/ops/cuda.h"
#include "hone/settings.h"
#include "model/model_spec.h"
#include "model/step_bench.h"
#endif

namespace hone::cli {

std::vector<std::pair<std::string, int>> parse_omit(const std::vector<std::string> &names) {
  std::vector<std::pair<std::string, int>> out;
  for (const std::string &name : names) {
    int kind = -1;
    std::string kinds;
    for (int k = 0; k < model::kStepOpCount; ++k) {
      const char *kind_name = model::to_string(static_cast<model::StepOp>(k));
      kinds += std::string(k ? ", " : "") + kind_name;
      if (name == kind_name)
        kind = k;
    }
    if (kind < 0)
      HONE_INVALID_ARGUMENT("--omit: unknown kind of launch '" + name + "' (" + kinds + ")");
    out.emplace_back(name, kind);
  }
  return out;
}

std::pair<int, int> parse_quant(const std::string &text) {
  if (text == "bf16")
    return {16, 0};
  static const std::regex re("int([48]):g(32|64|128)");
  std::smatch m;
  if (!std::regex_match(text, m, re))
    HONE_INVALID_ARGUMENT("--quant: '" + text +
                          "' is not bf16 or int<4|8>:g<32|64|128> (e.g. int4:g64)");
  return {std::stoi(m[1]), std::stoi(m[2])};
}

int64_t parse_tokens(const std::string &text, std::string_view option) {
  static const std::regex re("([0-9]{1,9})([kK]?)");
  std::smatch m;
  if (!std::regex_match(text, m, re) || std::stoll(m[1]) <= 0)
    HONE_INVALID_ARGUMENT(std::string(option) + ": '" + text +
                          "' is not a positive token count (e.g. 4096, 4k)");
  return std::stoll(m[1]) * (m[2].length() ? 1024 : 1);
}

model::StepOptions quant_step_options(int bits, int group, int64_t page_size, uint64_t seed) {
  model::StepOptions so;
  so.bits = bits;
  so.group = group ? group : 64;
  so.page_size = page_size;
  so.seed = seed;
  return so;
}

bool pdl_chain_wins(double pdl_off_seconds, double pdl_on_seconds, int64_t pdl_mismatches) {
  return pdl_mismatches == 0 && pdl_on_seconds < (1 - TunerOptions{}.min_margin) * pdl_off_seconds;
}

DispatcherOptions default_path_options() {
  DispatcherOptions o;
  o.use_cache = false;
  o.autotune = false;
  return o;
}

StepCommand::StepCommand(CLI::App &parent, const GlobalOptions &global)
    : global_(global), app_(parent.add_subcommand(
                           "step", "Run and time a model's decode step through hone (CUDA)")) {
  app_->add_option("--model", options_.model, "Hugging Face config.json (Llama, Qwen2)")
      ->required();
  app_->add_option("--batch", options_.batch, "Requests, one new token each (1..32)")
      ->capture_default_str();
  app_->add_option("--context", options_.context, "Tokens cached per request (e.g. 4096, 4k)")
      ->capture_default_str();
  app_->add_option("--prefill", options_.prefill,
                   "A prefill step of this many tokens per request after --context cached ones "
                   "(0: a decode step; batch x prefill <= 4096)")
      ->capture_default_str();
  app_->add_option("--quant", options_.quant, "Linear weights: bf16 or int<4|8>:g<group>")
      ->capture_default_str();
  app_->add_option("--page-size", options_.page_size, "KV cache page (16, 32, 64)")
      ->capture_default_str();
  app_->add_option("--samples", options_.samples, "Interleaved samples per median")
      ->capture_default_str();
  app_->add_option("--check-replays", options_.check_replays,
                   "Graph replays of a PDL step compared bit for bit with PDL off")
      ->capture_default_str();
  app_->add_flag("--no-breakdown", options_.no_breakdown, "Skip the per-op breakdown");
  app_->add_flag("--separate-rope-append", options_.separate_rope_append,
                 "Also time the tuned PDL step with rope, the K/V append and the q/k/v bias as "
                 "separate launches, as before they were fused (same bits)");
  app_->add_flag("--weights-once", options_.weights_once,
                 "Also time the tuned PDL step with the decode linears of the mma path as their "
                 "weights-once ring twins, whose weights start before the wait (same bits)");
  app_->add_flag("--separate-silu-mul", options_.separate_silu_mul,
                 "Also time the tuned PDL step with SiLU x up as its own launch, as before the "
                 "step took it into the epilogue of the gate/up linear (same bits)");
  app_->add_flag("--norm-variant", options_.norm_variant,
                 "Also time the tuned PDL step with the rmsnorm after o_proj and down the other "
                 "way from the step's default: in those linears' launches (fused-norm) or as "
                 "launches of their own (separate-norm); the same bits");
  app_->add_option("--carveout", options_.carveouts,
                   "Also time the tuned PDL step with every dependent launch asking for this "
                   "L1 / shared-memory split, in percent of the most shared memory (one variant "
                   "each; the same bits): one split for the whole chain")
      ->delimiter(',')
      ->check(CLI::Range(0, 100));
  app_->add_option("--omit", options_.omit,
                   "Also time the tuned PDL step without the launches of these kinds (the names "
                   "of the per-op breakdown, e.g. rmsnorm; one variant each): their share of the "
                   "chain as it runs. Timing only: such a step's outputs are not the step's")
      ->delimiter(',');
  app_->add_option("--kv-prefetch", options_.kv_prefetch_kib,
                   "Also time the tuned PDL step with decode.paged asking L2 for this many KiB "
                   "per CTA of cached K and V before its wait (a comma-separated list: one "
                   "variant each, same run)")
      ->delimiter(',')
      ->check(CLI::Range(0, 1 << 20));
  app_->add_option("--seed", options_.seed, "Weights, cache and inputs")->capture_default_str();
  app_->add_option("--json", options_.json_path, "Also write the results as JSON");
  app_->add_option("--weights", options_.weights,
                   "bf16 weights of Hugging Face names: a .safetensors file or a checkpoint "
                   "directory (model.safetensors.index.json or model.safetensors); int4 / int8 "
                   "steps quantise them on the device. Default: random seeded weights");
  app_->add_option("--export", options_.export_dir,
                   "Write the step to this directory and exit without timing: config.json, "
                   "model.safetensors (weights, Hugging Face names), step.safetensors (input, "
                   "positions, K and V of the cached tokens), step.json, and the outputs of one "
                   "default-tactic PDL-off step as float32 .npy (hidden, logits, appended_k, "
                   "appended_v), for bench/peers/decode_step_torch.py --from. It holds every "
                   "weight and the whole cache: large for big models (llama-3.1-8b at context 4k "
                   "is about 17 GB); meant for small ones");
}

#if HONE_WITH_CUDA
namespace {

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

// `values` (bf16 bit patterns) as a float32 .npy of `shape` (widening is exact).
void write_bf16_as_npy(const std::filesystem::path &path, const std::vector<int64_t> &shape,
                       const std::vector<uint16_t> &values) {
  std::vector<float> f(values.size());
  for (size_t i = 0; i < values.size(); ++i)
    f[i] = bf16_to_float(values[i]);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << npy_header("<f4", shape);
  out.write(reinterpret_cast<const char *>(f.data()), std::streamsize(f.size() * sizeof(float)));
  if (!out)
    HONE_RUNTIME_ERROR("--export: cannot write '" + path.string() + "'");
}

// --export: one step with the default tactics and PDL off, then the step and its outputs in
// `dir` (model/step_export.h; the outputs as hidden.npy [batch, hidden], logits.npy [batch,
// vocab], appended_k.npy and appended_v.npy [layers, batch, hkv, head_dim]).
int export_step(model::DecodeStep &step, Dispatcher &defaults, const std::filesystem::path &dir,
                const std::string &quant, std::ostream &out) {
  step.enqueue(nullptr, defaults, /*pdl=*/false);
  const model::HostStepOutputs o = step.host_outputs();
  model::export_decode_step(step, dir);
  const model::ModelSpec &m = step.spec();
  const int64_t B = step.options().batch;
  write_bf16_as_npy(dir / "hidden.npy", {B, m.hidden}, o.hidden);
  write_bf16_as_npy(dir / "logits.npy", {B, m.vocab}, o.logits);
  std::vector<uint16_t> k, v;
  for (size_t i = 0; i < o.appended_k.size(); ++i) {
    k.insert(k.end(), o.appended_k[i].begin(), o.appended_k[i].end());
    v.insert(v.end(), o.appended_v[i].begin(), o.appended_v[i].end());
  }
  write_bf16_as_npy(dir / "appended_k.npy", {m.layers, B, m.hkv, m.head_dim}, k);
  write_bf16_as_npy(dir / "appended_v.npy", {m.layers, B, m.hkv, m.head_dim}, v);
  out << "exported " << m.name << " (" << m.layers << " layers, " << quant << " weights"
      << (step.options().weights.empty() ? ", random" : ", from " + step.options().weights)
      << "), batch " << B << ", context " << step.options().context << " to " << dir.string()
      << "\noutputs of one step with the default tactics, PDL off; compare with\n"
         "  python3 bench/peers/decode_step_torch.py --from "
      << dir.string() << "\n";
  return 0;
}

} // namespace

int StepCommand::run() {
  const auto [bits, group] = parse_quant(options_.quant);
  const std::vector<std::pair<std::string, int>> omitted = parse_omit(options_.omit);
  model::StepOptions so = quant_step_options(bits, group, options_.page_size, options_.seed);
  so.batch = options_.batch;
  // A prefill may start from an empty cache (a prompt); a decode step needs a token cached.
  so.context = options_.prefill > 0 && options_.context == "0"
                   ? 0
                   : parse_tokens(options_.context, "--context");
  so.weights = options_.weights;
  so.prefill = options_.prefill;
  if (!options_.json_path.empty())
    require_writable(options_.json_path, "--json");
  if (!global_.backend.empty() && global_.backend != "cuda")
    HONE_INVALID_ARGUMENT("hone step runs on the cuda backend, not '" + global_.backend + "'");
  const model::ModelSpec spec = model::load_model_spec(options_.model);
  Dispatcher &tuned = ops::cuda::dispatcher();
  Backend &backend = tuned.backend();
  Dispatcher defaults(backend, default_path_options());

  if (!options_.export_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(options_.export_dir, ec);
    if (ec)
      HONE_INVALID_ARGUMENT("--export: cannot create '" + options_.export_dir +
                            "': " + ec.message());
  }
  model::DecodeStep step(spec, so);
  if (!options_.export_dir.empty())
    return export_step(step, defaults, options_.export_dir, options_.quant, std::cout);
  model::StepBenchOptions bo;
  bo.samples = options_.samples;
  bo.check_replays = options_.check_replays;
  bo.breakdown = !options_.no_breakdown;
  // The tuned step's chain tactic is the pick `hone tune --model` cached for this step, where
  // the cache holds a usable one; the others are still timed below.
  // (A prefill step's chain tactic is not cached: this run's measurement decides.)
  ChainLookup cached_chain;
  if (so.prefill == 0)
    cached_chain =
        cached_chain_pick(spec, so.batch, bits, group, so.page_size, backend, settings());
  else
    cached_chain.key = "(prefill steps are not cached)";
  std::vector<model::StepVariant> variants = {model::step_variant("default", &defaults, false),
                                              model::step_variant("default+pdl", &defaults, true),
                                              model::step_variant("tuned", &tuned, false),
                                              model::step_variant("tuned+pdl", &tuned, true)};
  // PDL with decode.paged's KV prefetch: the distances asked for, and the cached pick's.
  std::vector<int> distances = options_.kv_prefetch_kib;
  if (cached_chain.usable() && cached_chain.choice.kv_prefetch_kib > 0)
    distances.push_back(cached_chain.choice.kv_prefetch_kib);
  std::sort(distances.begin(), distances.end());
  distances.erase(std::unique(distances.begin(), distances.end()), distances.end());
  for (int kib : distances)
    if (kib > 0)
      variants.push_back(
          model::step_variant("tuned+pdl+kv" + std::to_string(kib) + "k", &tuned, true, kib));
  // PDL with rmsnorm's early trigger (the chain candidate pdl=1,early=1), with the cached pick's
  // KV prefetch where it has one.
  variants.push_back(model::step_variant("tuned+pdl+early", &tuned, true,
                                         cached_chain.usable() && cached_chain.choice.early_trigger
                                             ? cached_chain.choice.kv_prefetch_kib
                                             : 0));
  variants.back().early_trigger = true;
  // Measured beside the chain tactics, not one of them: never the chain pick.
  if (options_.separate_rope_append) {
    variants.push_back(model::step_variant("tuned+pdl+separate", &tuned, true));
    variants.back().fuse_rope_append = false;
  }
  if (options_.weights_once) {
    variants.push_back(model::step_variant("tuned+pdl+ring", &tuned, true));
    variants.back().weights_once = true;
  }
  if (options_.separate_silu_mul) {
    variants.push_back(model::step_variant("tuned+pdl+separate-silu", &tuned, true));
    variants.back().fuse_silu_mul = false;
  }
  if (options_.norm_variant) {
    const bool fuse = !step.options().fuse_norm;
    variants.push_back(model::step_variant(
        fuse ? "tuned+pdl+fused-norm" : "tuned+pdl+separate-norm", &tuned, true));
    variants.back().fuse_norm = fuse;
  }
  for (int percent : options_.carveouts) {
    variants.push_back(
        model::step_variant("tuned+pdl+smem" + std::to_string(percent), &tuned, true));
    variants.back().shared_carveout = percent;
  }
  for (const auto &[name, kind] : omitted) {
    variants.push_back(model::step_variant("tuned+pdl-without-" + name, &tuned, true));
    variants.back().omit = 1u << kind;
  }
  const model::StepBenchResult r = model::bench_decode_step(step, variants, bo);
  // The variant of a chain choice: tuned, tuned+pdl or a tuned+pdl+kv variant (the rope
  // launches of tuned+pdl, no twins).
  const auto index_of = [&](const ChainChoice &c) {
    model::StepLaunch want = r.variants[3].launch; // tuned+pdl's fusions
    want.pdl = c.pdl;
    want.kv_prefetch_kib = c.pdl ? c.kv_prefetch_kib : 0;
    want.early_trigger = c.pdl && c.early_trigger;
    for (size_t i = 2; i < r.variants.size(); ++i)
      if (r.variants[i].launch == want)
        return i;
    return size_t{2};
  };
  // The chain tactic this run measures (decide_chain over the tuned variants): PDL where its
  // replays were bit-identical to PDL off and it beats the tuned PDL-off step by the switch
  // margin (2 %, the tuner's floor); a KV prefetch where it beats that choice by the margin.
  const ChainDecision measured = decide_chain(chain_timing(r, 2));
  const size_t measured_pick = index_of(measured.choice);
  const size_t pick = cached_chain.usable() ? index_of(cached_chain.choice) : measured_pick;
  const double bw = backend.measure_read_bandwidth().value_or(0);
  const double bytes = double(step.weight_bytes() + step.kv_bytes());

  std::ostream &out = std::cout;
  out << "model: " << spec.name << " (" << spec.family << ", " << spec.layers << " layers), "
      << options_.quant << " weights" << (so.weights.empty() ? " (random)" : " from " + so.weights)
      << ", batch " << so.batch << ", context " << so.context << ", page " << so.page_size
      << (so.prefill ? ", prefill of " + std::to_string(so.prefill) + " tokens per request" : "")
      << "\n";
  out << "device: " << backend.info().model << "; measured read bandwidth " << fixed(bw / 1e9, 0)
      << " GB/s\n";
  out << "bytes per step: weights " << fixed(double(step.weight_bytes()) / 1e9, 3) << " GB + KV "
      << fixed(double(step.kv_bytes()) / 1e9, 3) << " GB = " << fixed(bytes / 1e9, 3) << " GB\n";
  if (so.prefill)
    out << "prefill: " << step.rows() << " rows through every layer, "
        << fixed(step.flops() / 1e12, 2)
        << " TFLOP per step; bf16 linears above 32 rows run cuBLASLt's GEMM (vendor, not tuned by "
           "hone); attention runs decode.paged with one request per query row\n";
  out << "method: CUDA graph per variant, interleaved, median of " << std::max(3, bo.samples)
      << " samples of " << r.replays_per_sample
      << " replays; warm replays (weights exceed the L2 many times over)\n\n";
  out << "| variant | step us | tokens/s | GB/s | of read bw | TFLOP/s | default/this | PDL check "
         "|\n|---|---:|---:|---:|---:|---:|---:|---|\n";
  const double base = r.variants[0].seconds;
  for (const model::StepVariantResult &v : r.variants) {
    std::string check = "-";
    if (v.mismatches >= 0)
      check = v.mismatches == 0 ? "bit-identical over " + std::to_string(v.check_replays)
                                : std::to_string(v.mismatches) + " words differ over " +
                                      std::to_string(v.check_replays) + " replays (PDL REJECTED)";
    out << "| " << v.name << " | " << fixed(v.seconds * 1e6, 1) << " | "
        << fixed(double(step.rows()) / v.seconds, 0) << " | " << fixed(bytes / v.seconds / 1e9, 0)
        << " | " << (bw > 0 ? fixed(bytes / v.seconds / bw, 3) : "-") << " | "
        << fixed(step.flops() / v.seconds / 1e12, 1) << " | " << fixed(base / v.seconds, 3) << " | "
        << check << " |\n";
  }
  const model::StepVariantResult &chosen = r.variants[pick];
  out << "\nchain tactic: pdl=" << (chosen.launch.pdl ? "on" : "off")
      << (chosen.launch.kv_prefetch_kib > 0
              ? ", kv_prefetch=" + std::to_string(chosen.launch.kv_prefetch_kib)
              : std::string())
      << (chosen.launch.early_trigger ? ", early trigger" : "") << " (" << chosen.name << ", "
      << fixed(r.variants[2].seconds / chosen.seconds, 3) << "x tuned PDL-off, "
      << fixed(base / chosen.seconds, 3) << "x default)\n";
  out << "chain pick: "
      << (cached_chain.usable()
              ? "the cache's (" + cached_chain.key + ", tuned " + cached_chain.entry->date + ")"
              : "this run's (the cache has no usable entry for " + cached_chain.key + ")")
      << "; this run measured " << short_tactic(chain_tactic(measured.choice).str(), kChainOpName)
      << "\n";
  // The tuned step's outputs against the default path's: bit-identical wherever the tuned
  // dispatcher serves the defaults (no cache entry, no lazy tune).
  const int64_t tuned_differs = r.variants[2].differs_from_first;
  out << "tuned step outputs against the default step's (PDL off, logits and final hidden "
         "state): "
      << (tuned_differs == 0 ? std::string("bit-identical")
                             : std::to_string(tuned_differs) +
                                   " 16-bit words differ (tuned tactics that sum in another "
                                   "order)")
      << "\n";
  double sum = 0;
  for (const model::StepOpTime &t : r.breakdown)
    sum += t.seconds;
  if (!r.breakdown.empty()) {
    out << "\nper-op breakdown (default tactics, PDL off; each kind alone in its own graph):\n"
           "| op | launches | us | share |\n|---|---:|---:|---:|\n";
    for (const model::StepOpTime &t : r.breakdown)
      out << "| " << model::to_string(t.op) << " | " << t.launches << " | "
          << fixed(t.seconds * 1e6, 1) << " | " << fixed(t.seconds / sum, 3) << " |\n";
    out << "| sum | | " << fixed(sum * 1e6, 1) << " | |\n";
  }
  if (!options_.json_path.empty()) {
    nlohmann::json j{{"model", spec.name},
                     {"family", spec.family},
                     {"quant", options_.quant},
                     {"weights", so.weights.empty() ? "random" : so.weights},
                     {"batch", so.batch},
                     {"context", so.context},
                     {"prefill", so.prefill},
                     {"rows", step.rows()},
                     {"flops", step.flops()},
                     {"page_size", so.page_size},
                     {"device", backend.info().model},
                     {"read_bandwidth_bytes_per_s", bw},
                     {"weight_bytes", step.weight_bytes()},
                     {"kv_bytes", step.kv_bytes()},
                     {"replays_per_sample", r.replays_per_sample},
                     {"mode", "warm"},
                     {"chain_pick", chosen.name},
                     {"chain_source", cached_chain.usable() ? "cache" : "this run"},
                     {"chain_measured_pick", r.variants[measured_pick].name},
                     {"tuned_words_differing_from_default", tuned_differs}};
    for (const model::StepVariantResult &v : r.variants)
      j["variants"].push_back(step_variant_json(v));
    for (const model::StepOpTime &t : r.breakdown)
      j["breakdown"].push_back(
          {{"op", model::to_string(t.op)}, {"launches", t.launches}, {"seconds", t.seconds}});
    std::ofstream(options_.json_path) << j.dump(2) << '\n';
  }
  for (const model::StepVariantResult &v : r.variants)
    if (v.mismatches > 0)
      return 1;
  return 0;
}
#else
int StepCommand::run() {
  HONE_INVALID_ARGUMENT("hone step needs the CUDA backend; this build has none");
}
#endif

} // namespace hone::cli
