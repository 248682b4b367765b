#include "model/step_bench.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include <cuda_runtime.h>

#include "cuda/backend/cuda_check.h"
#include "cuda/backend/device_buffer.h"
#include "cuda/gate/count_bf16.h"
#include "hone/error.h"

namespace hone::model {
namespace {

using cuda::DeviceBuffer;

// One captured graph, replayed on the stream it was captured on.
class Graph {
public:
  template <class Body> Graph(cudaStream_t stream, Body body) : stream_(stream) {
    HONE_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    try {
      body();
    } catch (...) {
      cudaGraph_t g = nullptr;
      cudaStreamEndCapture(stream, &g);
      if (g)
        cudaGraphDestroy(g);
      throw;
    }
    HONE_CUDA_CHECK(cudaStreamEndCapture(stream, &graph_));
    HONE_CUDA_CHECK(cudaGraphInstantiate(&exec_, graph_, 0));
  }
  ~Graph() {
    if (exec_)
      cudaGraphExecDestroy(exec_);
    if (graph_)
      cudaGraphDestroy(graph_);
  }
  Graph(const Graph &) = delete;
  Graph &operator=(const Graph &) = delete;
  void replay(int times) {
    for (int i = 0; i < times; ++i)
      HONE_CUDA_CHECK(cudaGraphLaunch(exec_, stream_));
  }

private:
  cudaStream_t stream_;
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
};

class Events {
public:
  Events() {
    HONE_CUDA_CHECK(cudaEventCreate(&a_));
    HONE_CUDA_CHECK(cudaEventCreate(&b_));
  }
  ~Events() {
    cudaEventDestroy(a_);
    cudaEventDestroy(b_);
  }
  template <class Body> double time(cudaStream_t s, Body body) {
    HONE_CUDA_CHECK(cudaEventRecord(a_, s));
    body();
    HONE_CUDA_CHECK(cudaEventRecord(b_, s));
    HONE_CUDA_CHECK(cudaEventSynchronize(b_));
    float ms = 0;
    HONE_CUDA_CHECK(cudaEventElapsedTime(&ms, a_, b_));
    return double(ms) * 1e-3;
  }

private:
  cudaEvent_t a_ = nullptr, b_ = nullptr;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

StepLaunch launch_of(const StepVariant &v, const DecodeStep &step) {
  return {v.pdl,
          v.pdl ? v.kv_prefetch_kib : 0,
          v.fuse_rope_append.value_or(step.options().fuse_rope_append),
          v.pdl && v.weights_once,
          v.fuse_silu_mul.value_or(step.options().fuse_silu_mul),
          v.fuse_norm.value_or(step.options().fuse_norm),
          v.omit,
          v.pdl ? v.shared_carveout : -1,
          v.pdl && v.early_trigger};
}

int launches_of(StepOp op, const DecodeStep &step) {
  const int64_t layers = step.spec().layers;
  switch (op) {
  case StepOp::rmsnorm:
    return int(2 * layers + 1);
  case StepOp::lm_head:
    return 1;
  case StepOp::kv_append: // in rope's launch when fused
    return step.options().fuse_rope_append ? 0 : int(layers);
  default:
    return int(layers);
  }
}

} // namespace

StepBenchResult bench_decode_step(DecodeStep &step, const std::vector<StepVariant> &variants,
                                  const StepBenchOptions &options) {
  HONE_CHECK(!variants.empty(), "bench_decode_step: no variant");
  cudaStream_t s = nullptr;
  HONE_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  struct StreamGuard {
    cudaStream_t s;
    ~StreamGuard() { cudaStreamDestroy(s); }
  } guard{s};
  const size_t logits = step.logits_elements(), hidden = step.hidden_elements();
  DeviceBuffer ref_logits(logits * 2), ref_hidden(hidden * 2);
  DeviceBuffer first_logits(logits * 2), first_hidden(hidden * 2);
  DeviceBuffer mismatches(sizeof(unsigned long long));
  auto *count = mismatches.as<unsigned long long>();
  auto read_count = [&] {
    unsigned long long host = 0;
    HONE_CUDA_CHECK(cudaMemcpyAsync(&host, count, sizeof host, cudaMemcpyDeviceToHost, s));
    HONE_CUDA_CHECK(cudaStreamSynchronize(s));
    return int64_t(host);
  };
  // Adds to the count the words of the step's logits and final hidden state that differ from
  // `want_logits` and `want_hidden` (asynchronous: a graph may capture it).
  auto add_differing = [&](const DeviceBuffer &want_logits, const DeviceBuffer &want_hidden) {
    cuda::add_count_bf16(static_cast<const uint16_t *>(step.logits()),
                         want_logits.as<const uint16_t>(), logits, count, s);
    cuda::add_count_bf16(static_cast<const uint16_t *>(step.hidden()),
                         want_hidden.as<const uint16_t>(), hidden, count, s);
  };
  StepBenchResult out;
  std::vector<std::unique_ptr<Graph>> graphs;
  // Every variant runs eagerly before any graph is captured: tactics resolve (a lazy tune may
  // run) and the stream's workspace grows to what the hungriest variant needs. A graph holds
  // the workspace's address; growing it later frees that buffer under an earlier variant's
  // graph (a tuned qmm tactic of a prefill can need more than the default's). Each variant's
  // outputs are compared with the first variant's (same inputs, so a step of the same tactics
  // gives the same bits).
  for (const StepVariant &v : variants) {
    HONE_CHECK(v.dispatcher != nullptr, "bench_decode_step: variant without a dispatcher");
    StepVariantResult r;
    r.name = v.name;
    r.launch = launch_of(v, step);
    step.enqueue(s, *v.dispatcher, false);
    step.enqueue(s, *v.dispatcher, r.launch);
    if (out.variants.empty()) {
      HONE_CUDA_CHECK(cudaMemcpyAsync(first_logits.data(), step.logits(), logits * 2,
                                      cudaMemcpyDeviceToDevice, s));
      HONE_CUDA_CHECK(cudaMemcpyAsync(first_hidden.data(), step.hidden(), hidden * 2,
                                      cudaMemcpyDeviceToDevice, s));
    } else {
      HONE_CUDA_CHECK(cudaMemsetAsync(mismatches.data(), 0, sizeof(unsigned long long), s));
      add_differing(first_logits, first_hidden);
      r.differs_from_first = read_count();
    }
    out.variants.push_back(std::move(r));
  }
  HONE_CUDA_CHECK(cudaStreamSynchronize(s));
  for (size_t i = 0; i < variants.size(); ++i) {
    const StepVariant &v = variants[i];
    StepVariantResult &r = out.variants[i];
    if (r.launch.pdl && options.check_replays > 0) {
      // The reference: the same launches without PDL (DecodeStep::run drops what needs it: the
      // KV prefetch, the weights-once twins, the chain's split and early trigger).
      StepLaunch serial = r.launch;
      serial.pdl = false;
      step.enqueue(s, *v.dispatcher, serial);
      HONE_CUDA_CHECK(cudaMemcpyAsync(ref_logits.data(), step.logits(), logits * 2,
                                      cudaMemcpyDeviceToDevice, s));
      HONE_CUDA_CHECK(cudaMemcpyAsync(ref_hidden.data(), step.hidden(), hidden * 2,
                                      cudaMemcpyDeviceToDevice, s));
      HONE_CUDA_CHECK(cudaMemsetAsync(mismatches.data(), 0, sizeof(unsigned long long), s));
      Graph check(s, [&] {
        step.enqueue(s, *v.dispatcher, r.launch);
        add_differing(ref_logits, ref_hidden);
      });
      check.replay(options.check_replays);
      r.mismatches = read_count();
      r.check_replays = options.check_replays;
    }
    graphs.push_back(std::make_unique<Graph>(s, [&] { step.enqueue(s, *v.dispatcher, r.launch); }));
  }
  Events events;
  // Replays per sample from the first variant's time.
  graphs[0]->replay(2);
  const double first = events.time(s, [&] { graphs[0]->replay(3); }) / 3;
  out.replays_per_sample =
      std::max(3, int(std::ceil(options.sample_seconds / std::max(first, 1e-7))));
  const int n = out.replays_per_sample;
  std::vector<std::vector<double>> samples(variants.size());
  for (int i = 0; i < std::max(3, options.samples); ++i)
    for (size_t v = 0; v < variants.size(); ++v)
      samples[v].push_back(events.time(s, [&] { graphs[v]->replay(n); }) / n);
  for (size_t v = 0; v < variants.size(); ++v) {
    const auto [lo, hi] = std::minmax_element(samples[v].begin(), samples[v].end());
    out.variants[v].seconds = median(samples[v]);
    out.variants[v].spread = (*hi - *lo) / out.variants[v].seconds;
  }
  if (options.breakdown) {
    Dispatcher &d = *variants[0].dispatcher;
    for (int k = 0; k < kStepOpCount; ++k) {
      const StepOp op = static_cast<StepOp>(k);
      if (launches_of(op, step) == 0) // fused into another kind's launch
        continue;
      step.enqueue_only(op, s, d, false);
      Graph g(s, [&] { step.enqueue_only(op, s, d, false); });
      g.replay(2);
      std::vector<double> t;
      for (int i = 0; i < std::max(3, options.samples); ++i)
        t.push_back(events.time(s, [&] { g.replay(n); }) / n);
      out.breakdown.push_back({op, launches_of(op, step), median(t)});
    }
  }
  HONE_CUDA_CHECK(cudaStreamSynchronize(s));
  return out;
}

} // namespace hone::model
