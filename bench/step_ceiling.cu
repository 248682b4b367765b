// step_ceiling: the loads-only ceiling of a decode step made of separate kernels. The step's
// launches (src/model/decode_step.cpp: per layer rmsnorm, q/k/v, rope with the bias and the
// KV append (one launch, as the step runs it), the attention's split and merge, o, rmsnorm,
// gate/up, SiLU x up (in gate/up's launch, as the step runs a decode batch), down; then the
// final norm and the lm_head) are replayed as loads-only kernels
// that read exactly the bytes each launch reads (a linear its weights, the attention the K and V of
// context + 1 tokens per request, a small op its activations and norm weights), one buffer per
// launch, in one CUDA graph. No arithmetic, so what is left between the step's bytes and the read
// bandwidth is the chain's own cost: a kernel's ramp-up and tail, and the gaps between launches.
//
// Variants (all in one process, interleaved sample by sample, median):
//   plain     every link a plain launch;
//   pdl       every link a programmatic dependent launch that waits and triggers at its entry
//             (what hone's step kernels do);
//   preload   as pdl, but a link whose bytes do not depend on the previous kernel (a linear's
//             weights, the cached K and V) issues its first loads (one iteration: U 16-byte
//             loads per thread) before griddepcontrol.wait: the most a register-pipelined kernel
//             can have in flight when the previous kernel ends.
// each at 2 and 4 CTAs of 512 threads per SM for the large links, and each again with the small
// ops left out (the linears and the attention's K and V alone: what fusing every small op into
// a neighbour would leave).
//
// Bytes and fractions are those of `hone step` (model::step_weight_bytes + step_kv_bytes, what
// DecodeStep::weight_bytes and kv_bytes report, over the backend's read-bandwidth probe,
// measured in this process); --quant and --context are read by hone step's parsers.
//
//   step_ceiling --model models/llama-3.1-8b.json --quant bf16,int4:g64 --batch 1 --context 4k
//       [--samples 9] [--json out.json]
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <cuda_runtime.h>
#include <nlohmann/json.hpp>

#include "cuda/backend/read_bandwidth_probe.h"
#include "cuda/kernels/common/pdl.cuh"
#include "hone/error.h"
#include "hone/step_command.h"
#include "kernel_harness.cuh"
#include "model/decode_step.h"
#include "model/model_spec.h"

namespace hone::cuda::step_ceiling {

using namespace harness;       // NOLINT: KT_CHECK, DeviceMem, ld_stream, median
using namespace kernel_detail; // NOLINT: pdl_wait, pdl_launch_dependents

constexpr int kUnroll = 4;              // 16-byte loads in flight per thread and iteration
constexpr int kLargeThreads = 512;      // threads of a large link's CTAs
constexpr int kSmallThreads = 256;      // threads of a small op's CTAs
constexpr size_t kLargeBytes = 1 << 20; // a link of at least this many bytes is large

enum class Mode { plain, pdl, preload };

const char *mode_name(Mode m) {
  switch (m) {
  case Mode::plain:
    return "plain";
  case Mode::pdl:
    return "pdl";
  case Mode::preload:
    return "preload";
  }
  return "?";
}

struct LinkParams {
  const uint4 *p;
  size_t count; // 16-byte words
  uint32_t *sink;
  int mode;        // Mode
  int independent; // its bytes do not depend on the previous kernel
};

__device__ __forceinline__ void fold(uint32_t &acc, const uint4 &v) {
  acc ^= v.x ^ v.y ^ v.z ^ v.w;
}

// Grid-stride loads-only read of one link's bytes (the read_ceiling "stream" pattern).
__global__ void link_kernel(const LinkParams a) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  uint32_t acc = 0;
  uint4 first[kUnroll];
  bool have_first = false;
  if (a.mode == static_cast<int>(Mode::preload) && a.independent &&
      i + (kUnroll - 1) * stride < a.count) {
#pragma unroll
    for (int j = 0; j < kUnroll; ++j)
      first[j] = ld_stream(a.p + i + j * stride);
    have_first = true;
  }
  if (a.mode != static_cast<int>(Mode::plain)) {
    pdl_wait();
    pdl_launch_dependents();
  }
  if (have_first) {
#pragma unroll
    for (int j = 0; j < kUnroll; ++j)
      fold(acc, first[j]);
    i += kUnroll * stride;
  }
  for (; i + (kUnroll - 1) * stride < a.count; i += kUnroll * stride) {
    uint4 v[kUnroll];
#pragma unroll
    for (int j = 0; j < kUnroll; ++j)
      v[j] = ld_stream(a.p + i + j * stride);
#pragma unroll
    for (int j = 0; j < kUnroll; ++j)
      fold(acc, v[j]);
  }
  for (; i < a.count; i += stride)
    fold(acc, ld_stream(a.p + i));
  if (acc == 0x9e3779b9u) // never true for the fill below; keeps every load alive
    *a.sink = acc;
}

struct Link {
  std::string op;
  size_t bytes;
  bool independent;
};

// The step's launches in order, with the bytes each reads: DecodeStep's accounting
// (model::linear_read_bytes, step_kv_bytes) for the weights and the K and V, the small ops'
// activations besides.
std::vector<Link> step_links(const model::ModelSpec &m, const model::StepOptions &o) {
  const size_t act = size_t(o.batch) * size_t(m.hidden) * 2;
  const size_t qkv_act = size_t(o.batch) * size_t(m.qkv_width()) * 2;
  const size_t norm = 2 * act + size_t(m.hidden) * 2; // x, residual, weight
  const size_t kv = model::step_kv_bytes(m, o) / size_t(m.layers);
  const size_t partials = size_t(o.batch) * size_t(m.hq * m.head_dim) * 4 * 8; // a few chunks
  const auto linear = [&](int64_t n, int64_t k) { return model::linear_read_bytes(n, k, o); };
  std::vector<Link> links;
  for (int64_t layer = 0; layer < m.layers; ++layer) {
    links.push_back({"rmsnorm", norm, false});
    links.push_back({"qkv", linear(m.qkv_width(), m.hidden), true});
    if (o.fuse_rope_append) { // one launch: bias, rope, and the K / V append
      links.push_back({"rope", qkv_act + (m.qkv_bias ? size_t(m.qkv_width()) * 2 : 0), false});
    } else {
      if (m.qkv_bias)
        links.push_back({"qkv_bias", qkv_act + size_t(m.qkv_width()) * 2, false});
      links.push_back({"rope", qkv_act, false});
      links.push_back({"kv_append", size_t(o.batch) * 2 * size_t(m.hkv * m.head_dim) * 2, false});
    }
    links.push_back({"attention", kv, true});
    links.push_back({"merge", partials, false});
    links.push_back({"o", linear(m.hidden, m.hq * m.head_dim), true});
    links.push_back({"rmsnorm", norm, false});
    links.push_back({"gate_up", linear(2 * m.inter, m.hidden), true});
    // SiLU x up in gate/up's epilogue where the step's default tactics have it (a decode batch:
    // bf16 up to 32 rows, int4 up to 8); its own launch otherwise.
    const bool silu_fused = o.fuse_silu_mul && o.prefill == 0 &&
                            (o.bits == 16 ? o.batch <= 32 : o.bits == 4 && o.batch <= 8);
    if (!silu_fused)
      links.push_back({"silu_mul", size_t(o.batch) * size_t(2 * m.inter) * 2, false});
    links.push_back({"down", linear(m.hidden, m.inter), true});
  }
  links.push_back({"rmsnorm", norm, false});
  links.push_back({"lm_head", linear(m.vocab, m.hidden), true});
  return links;
}

struct Variant {
  Mode mode;
  int ctas_per_sm;
  bool large_only; // the small ops left out, as if fused into their neighbours
  std::string name() const {
    return std::string(mode_name(mode)) + ",ctas=" + std::to_string(ctas_per_sm) +
           (large_only ? ",large links only" : "");
  }
};

int run(int argc, char **argv) {
  CLI::App app{"Loads-only ceiling of a decode step made of separate kernels"};
  std::vector<std::string> models, quants{"bf16"};
  int64_t batch = 1;
  std::string context_text = "4k";
  int samples = 9;
  std::string json_path;
  app.add_option("--model", models, "Hugging Face config.json (Llama, Qwen2)")->required();
  app.add_option("--quant", quants, "bf16 or int<4|8>:g<group>, comma-separated")
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("--batch", batch, "Requests")->check(CLI::Range(1, 64))->capture_default_str();
  app.add_option("--context", context_text, "Tokens cached per request")->capture_default_str();
  app.add_option("--samples", samples, "Interleaved samples per median")
      ->check(CLI::Range(3, 101))
      ->capture_default_str();
  app.add_option("--json", json_path, "Also write the results as JSON");
  CLI11_PARSE(app, argc, argv);
  // Every argument is judged before the device is touched, by the parsers of `hone step`.
  const int64_t context = cli::parse_tokens(context_text, "--context");
  std::vector<model::ModelSpec> specs;
  for (const std::string &model_path : models)
    specs.push_back(model::load_model_spec(model_path));
  std::vector<model::StepOptions> steps; // one per --quant
  for (const std::string &quant : quants) {
    const auto [bits, group] = cli::parse_quant(quant);
    model::StepOptions so = cli::quant_step_options(bits, group, model::StepOptions{}.page_size,
                                                    model::StepOptions{}.seed);
    so.batch = batch;
    so.context = context;
    steps.push_back(so);
  }

  cudaStream_t s{};
  KT_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaEvent_t e0{}, e1{};
  KT_CHECK(cudaEventCreate(&e0));
  KT_CHECK(cudaEventCreate(&e1));
  int sms = 0;
  KT_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  cudaDeviceProp prop{};
  KT_CHECK(cudaGetDeviceProperties(&prop, 0));
  const double bandwidth = run_read_bandwidth_probe(s, sms);
  std::printf("device: %s, %d SMs; measured read bandwidth %.0f GB/s\n", prop.name, sms,
              bandwidth * 1e-9);
  std::printf("method: the step's launches as loads-only kernels in one CUDA graph per variant, "
              "warm replays (the bytes exceed the L2), interleaved, median of %d samples\n\n",
              samples);
  nlohmann::json out = {{"device", prop.name}, {"read_bandwidth_bytes_per_s", bandwidth},
                        {"batch", batch},      {"context", context},
                        {"samples", samples},  {"results", nlohmann::json::array()}};

  std::vector<Variant> variants;
  for (const bool large_only : {false, true})
    for (const int ctas : {4, 2})
      for (const Mode mode : {Mode::plain, Mode::pdl, Mode::preload})
        variants.push_back({mode, ctas, large_only});
  for (const model::ModelSpec &m : specs) {
    for (size_t q = 0; q < quants.size(); ++q) {
      const std::string &quant = quants[q];
      const std::vector<Link> links = step_links(m, steps[q]);
      const size_t bytes =
          model::step_weight_bytes(m, steps[q]) + model::step_kv_bytes(m, steps[q]);
      size_t allocated = 0;
      std::vector<std::unique_ptr<DeviceMem>> buffers;
      for (const Link &l : links) {
        const size_t rounded = (l.bytes + 15) / 16 * 16;
        buffers.push_back(std::make_unique<DeviceMem>(rounded));
        KT_CHECK(cudaMemsetAsync(buffers.back()->p, 1, rounded, s));
        allocated += rounded;
      }
      DeviceMem sink(16);
      const auto enqueue = [&](const Variant &v, cudaStream_t stream) {
        for (size_t i = 0; i < links.size(); ++i) {
          const Link &l = links[i];
          const bool large = l.bytes >= kLargeBytes;
          if (v.large_only && !large)
            continue;
          LinkParams a{static_cast<const uint4 *>(buffers[i]->p), (l.bytes + 15) / 16,
                       static_cast<uint32_t *>(sink.p), static_cast<int>(v.mode),
                       l.independent ? 1 : 0};
          const int threads = large ? kLargeThreads : kSmallThreads;
          const size_t needed =
              (a.count + size_t(threads) * kUnroll - 1) / (size_t(threads) * kUnroll);
          const int cap = large ? sms * v.ctas_per_sm : sms;
          const int grid = static_cast<int>(std::max<size_t>(1, std::min<size_t>(needed, cap)));
          const LaunchStatus st = launch_maybe_dependent(link_kernel, dim3(grid), dim3(threads), 0,
                                                         stream, v.mode != Mode::plain, a);
          if (!st.ok())
            HONE_RUNTIME_ERROR("launch of " + l.op + " failed: " + st.message());
        }
      };
      // One graph per variant; replays per sample sized to >= 20 ms of the plain chain.
      std::vector<std::unique_ptr<GraphBatch>> graphs;
      for (const Variant &v : variants)
        graphs.push_back(std::make_unique<GraphBatch>(
            [&](int, cudaStream_t stream) { enqueue(v, stream); }, 1, 1, s));
      for (auto &g : graphs)
        for (int w = 0; w < 2; ++w)
          (void)g->time(s, e0, e1);
      const double one = graphs[0]->time(s, e0, e1);
      const int replays = std::max(1, static_cast<int>(0.02 / one));
      std::vector<std::vector<double>> times(variants.size());
      for (int sample = 0; sample < samples; ++sample)
        for (size_t v = 0; v < variants.size(); ++v) {
          KT_CHECK(cudaEventRecord(e0, s));
          for (int r = 0; r < replays; ++r)
            KT_CHECK(cudaGraphLaunch(graphs[v]->exec, s));
          KT_CHECK(cudaEventRecord(e1, s));
          KT_CHECK(cudaEventSynchronize(e1));
          float ms = 0;
          KT_CHECK(cudaEventElapsedTime(&ms, e0, e1));
          times[v].push_back(ms * 1e-3 / replays);
        }
      std::printf("## %s %s, batch %lld, context %lld: %zu launches, %.3f GB per step (%.3f GB "
                  "allocated)\n\n",
                  m.name.c_str(), quant.c_str(), static_cast<long long>(batch),
                  static_cast<long long>(context), links.size(), bytes * 1e-9, allocated * 1e-9);
      std::printf("| variant | step us | of read bw |\n| --- | ---: | ---: |\n");
      for (size_t v = 0; v < variants.size(); ++v) {
        const double t = median(times[v]);
        const double frac = static_cast<double>(bytes) / t / bandwidth;
        std::printf("| %s | %.1f | %.3f |\n", variants[v].name().c_str(), t * 1e6, frac);
        out["results"].push_back({{"model", m.name},
                                  {"quant", quant},
                                  {"variant", variants[v].name()},
                                  {"launches", links.size()},
                                  {"step_bytes", bytes},
                                  {"step_seconds", t},
                                  {"samples_seconds", times[v]},
                                  {"of_read_bandwidth", frac}});
      }
      std::printf("\n");
    }
  }
  if (!json_path.empty()) {
    std::ofstream f(json_path);
    f << out.dump(2) << '\n';
    if (!f)
      HONE_RUNTIME_ERROR("cannot write " + json_path);
  }
  return 0;
}

} // namespace hone::cuda::step_ceiling

int main(int argc, char **argv) {
  try {
    return hone::cuda::step_ceiling::run(argc, argv);
  } catch (const hone::Error &e) {
    std::fprintf(stderr, "step_ceiling: %s\n", e.what());
    return e.kind() == hone::ErrorKind::invalid_argument ? 2 : 1;
  }
}
