// DecodeStep against its float64 reference (model/step_reference), on two 2-layer models built
// here: a Llama-like one (8 q / 2 kv heads of 64, Llama-3.1 rope scaling) and a Qwen2-like one
// (4 q / 2 kv heads of 128, the q/k/v bias, tied lm_head), batch 2, context 100 (7 pages of 16,
// the last one partial). One step with the default tactics, PDL off; everything the step read
// is downloaded (weights, the cached K and V, the input) and the whole step computed again in
// float64. The final hidden state, the logits and every layer's appended K and V (the new
// token's, which carry rope and the q/k/v projection) must lie within step_reference_bound (the
// bf16 bound derived in docs/notes/decode_step.md, 2.0e-2 for 2 layers) in relative L2, and no
// element further than that bound times the largest |value|. bf16 weights and int4 g64 weights
// (against float64 on the dequantised q x scale + bias). Prefill steps, batch 2, within the same
// bound: 5 new tokens per request after 20 cached (10 rows: gemv.bf16 / qmv), and 40 from an
// empty cache (80 rows: cuBLASLt / qmm), every new token's K and V compared in every layer (each
// row attends causally to the cache and the new tokens up to itself). A prefill of one token is
// the decode step of the same options bit for bit. Then the export: read back through
// the safetensors reader bit for bit, loaded as --weights (a single file and a sharded
// directory), bf16 and quantised on the device (bit for bit hone quantize's quantizer), and
// the loaded steps checked against float64 again; a checkpoint of a wrong shape is named.
//
// HONE_DEVICE_TEST_BREAK_REFERENCE=1 moves the reference's rope one position on: every
// comparison of an appended K (decode and prefill) must then fail (a check that the comparison
// can fail).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include "cuda/backend/cuda_check.h"
#include "cuda/backend/device_buffer.h"
#include "device_test.h"
#include "hone/bf16.h"
#include "hone/dispatcher.h"
#include "hone/op.h"
#include "hone/ops/cpu.h"
#include "hone/ops/cuda.h"
#include "model/affine_quantize.h"
#include "model/checkpoint.h"
#include "model/decode_step.h"
#include "model/safetensors.h"
#include "model/safetensors_writer.h"
#include "model/step_reference.h"

namespace hone::model {
namespace {

using cuda::DeviceBuffer;

ModelSpec llama_like() {
  return parse_model_spec(R"({"model_type": "llama", "hidden_size": 512,
    "intermediate_size": 1024, "num_attention_heads": 8, "num_key_value_heads": 2,
    "head_dim": 64, "vocab_size": 1000, "num_hidden_layers": 2, "rms_norm_eps": 1e-5,
    "rope_theta": 500000.0, "tie_word_embeddings": false,
    "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                     "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}})",
                          "llama-like", "llama-like");
}

ModelSpec qwen2_like() {
  return parse_model_spec(R"({"model_type": "qwen2", "hidden_size": 512,
    "intermediate_size": 1024, "num_attention_heads": 4, "num_key_value_heads": 2,
    "head_dim": 128, "vocab_size": 1000, "num_hidden_layers": 2, "rms_norm_eps": 1e-6,
    "rope_theta": 1000000.0, "tie_word_embeddings": true})",
                          "qwen2-like", "qwen2-like");
}

constexpr int64_t kBatch = 2, kContext = 100;

bool break_reference() {
  const char *v = std::getenv("HONE_DEVICE_TEST_BREAK_REFERENCE");
  return v && std::string_view(v) == "1";
}

// The options of the tests' small steps: kBatch requests of kContext tokens, `bits`-bit linears
// (groups of 64 below 16 bits), weights and inputs from `seed`.
StepOptions small_step(int bits, uint64_t seed) {
  StepOptions o;
  o.batch = kBatch;
  o.context = kContext;
  o.bits = bits;
  o.group = 64;
  o.seed = seed;
  return o;
}

// The default tactics: no cache, no lazy tune.
DispatcherOptions default_tactics() {
  DispatcherOptions plain;
  plain.use_cache = false;
  plain.autotune = false;
  return plain;
}

// One step with the default tactics (no cache, no lazy tune, no override), PDL off.
HostStepOutputs run_default_step(DecodeStep &step) {
  Dispatcher defaults(ops::cuda::dispatcher().backend(), default_tactics());
  step.enqueue(nullptr, defaults, /*pdl=*/false);
  return step.host_outputs();
}

std::string sci(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3e", v);
  return text;
}

// `got` (bf16) against `want` (float64): relative L2 and the worst element within `bound`.
void expect_close(const std::string &what, const std::vector<uint16_t> &got,
                  const std::vector<double> &want, double bound) {
  const OutputError e = output_error(bf16_values(got), want);
  const std::string line = what + ": relative L2 " + sci(e.rel_l2) + " (bound " + sci(bound) +
                           "), max |error| " + sci(e.max_abs) + " at element " +
                           std::to_string(e.worst) + " (got " + sci(e.worst_got) + ", float64 " +
                           sci(e.worst_want) + "; max |float64| " + sci(e.want_max_abs) + ")";
  std::printf("  %s\n", line.c_str());
  EXPECT_LE(e.rel_l2, bound) << line;
  EXPECT_LE(e.max_abs, bound * e.want_max_abs) << line;
}

// The step's outputs against float64 on what the step read.
void expect_matches_reference(const std::string &what, const DecodeStep &step,
                              const HostStepOutputs &got) {
  HostStep state = download(step);
  if (break_reference())
    for (int32_t &p : state.inputs.positions)
      p += 1;
  const StepReferenceOutput want = reference_decode_step(state);
  const double bound = step_reference_bound(state.spec.layers);
  for (size_t i = 0; i < want.appended_k.size(); ++i) {
    expect_close(what + " layer " + std::to_string(i) + " appended K", got.appended_k[i],
                 want.appended_k[i], bound);
    expect_close(what + " layer " + std::to_string(i) + " appended V", got.appended_v[i],
                 want.appended_v[i], bound);
  }
  expect_close(what + " hidden", got.hidden, want.hidden, bound);
  expect_close(what + " logits", got.logits, want.logits, bound);
}

struct Case {
  const char *name;
  ModelSpec (*spec)();
  int bits;
  int64_t context = kContext;
  int64_t prefill = 0; // StepOptions::prefill: 0 a decode step
};

void PrintTo(const Case &c, std::ostream *os) { *os << c.name; }

class DecodeStepReferenceTest : public cuda::testing::DeviceTest,
                                public ::testing::WithParamInterface<Case> {};

TEST_P(DecodeStepReferenceTest, OneStepMatchesFloat64) {
  const Case c = GetParam();
  StepOptions o;
  o.batch = kBatch;
  o.context = c.context;
  o.prefill = c.prefill;
  o.bits = c.bits;
  o.group = 64;
  o.seed = 3;
  DecodeStep step(c.spec(), o);
  const HostStepOutputs got = run_default_step(step);
  const size_t appended =
      size_t(kBatch * (c.prefill > 0 ? c.prefill : 1) * step.spec().hkv * step.spec().head_dim);
  ASSERT_EQ(got.appended_k.at(0).size(), appended);
  ASSERT_EQ(got.hidden.size(), size_t(kBatch * step.spec().hidden));
  expect_matches_reference(c.name, step, got);
}

INSTANTIATE_TEST_SUITE_P(
    Models, DecodeStepReferenceTest,
    ::testing::Values(Case{"llama_bf16", llama_like, 16}, Case{"qwen2_bf16", qwen2_like, 16},
                      Case{"llama_int4_g64", llama_like, 4}, Case{"qwen2_int4_g64", qwen2_like, 4},
                      Case{"llama_bf16_context20_prefill5", llama_like, 16, 20, 5},
                      Case{"qwen2_bf16_context20_prefill5", qwen2_like, 16, 20, 5},
                      Case{"llama_int4_g64_context20_prefill5", llama_like, 4, 20, 5},
                      Case{"qwen2_int4_g64_context20_prefill5", qwen2_like, 4, 20, 5},
                      Case{"llama_bf16_context0_prefill40", llama_like, 16, 0, 40},
                      Case{"qwen2_bf16_context0_prefill40", qwen2_like, 16, 0, 40},
                      Case{"llama_int4_g64_context0_prefill40", llama_like, 4, 0, 40},
                      Case{"qwen2_int4_g64_context0_prefill40", qwen2_like, 4, 0, 40}),
    [](const ::testing::TestParamInfo<Case> &info) { return std::string(info.param.name); });

class DecodeStepExportTest : public cuda::testing::DeviceTest {
protected:
  std::filesystem::path dir_ = std::filesystem::temp_directory_path() /
                               ("hone_decode_step_export_" + std::to_string(::getpid()));
  void TearDown() override { std::filesystem::remove_all(dir_); }
};

// `got` equal to `want` bit for bit; else the count of differing elements and the first.
template <class T>
void expect_same_bits(const std::vector<T> &got, const std::vector<T> &want,
                      const std::string &what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  size_t differ = 0, first = got.size();
  for (size_t i = 0; i < got.size(); ++i)
    if (got[i] != want[i] && differ++ == 0)
      first = i;
  EXPECT_EQ(differ, 0u) << what << ": " << differ << " of " << got.size()
                        << " elements differ, the first at " << first << " (0x" << std::hex
                        << (first < got.size() ? uint64_t(got[first]) : 0) << " against 0x"
                        << (first < got.size() ? uint64_t(want[first]) : 0) << ")";
}

// Every output of two steps equal bit for bit: hidden, logits and each layer's appended K and V
// (`how` ends each message).
void expect_same_outputs(const HostStepOutputs &got, const HostStepOutputs &want,
                         const std::string &how) {
  expect_same_bits(got.hidden, want.hidden, "hidden" + how);
  expect_same_bits(got.logits, want.logits, "logits" + how);
  ASSERT_EQ(got.appended_k.size(), want.appended_k.size());
  for (size_t i = 0; i < want.appended_k.size(); ++i) {
    expect_same_bits(got.appended_k[i], want.appended_k[i],
                     "layer " + std::to_string(i) + " appended K" + how);
    expect_same_bits(got.appended_v[i], want.appended_v[i],
                     "layer " + std::to_string(i) + " appended V" + how);
  }
}

class DecodeStepPrefillTest : public cuda::testing::DeviceTest {};

// A prefill of one token per request runs the decode step's rows through the same ops (the same
// page table, tactics and buffers; the final norm reads a gathered copy of the same rows): every
// output equal bit for bit.
TEST_F(DecodeStepPrefillTest, APrefillOfOneTokenIsTheDecodeStepBitForBit) {
  for (ModelSpec (*make)() : {llama_like, qwen2_like})
    for (int bits : {16, 4}) {
      const ModelSpec m = make();
      SCOPED_TRACE(m.name + ", bits " + std::to_string(bits));
      StepOptions o = small_step(bits, 3);
      DecodeStep decode(m, o);
      o.prefill = 1;
      DecodeStep prefill(m, o);
      EXPECT_EQ(prefill.rows(), decode.rows());
      const HostStepInputs a = prefill.host_inputs(), b = decode.host_inputs();
      expect_same_bits(a.input, b.input, "input");
      expect_same_bits(a.positions, b.positions, "positions");
      const HostStepOutputs got = run_default_step(prefill), want = run_default_step(decode);
      expect_same_outputs(got, want, "");
    }
}

// Rope with the K/V append and Qwen2's q/k/v bias in one launch (StepOptions::fuse_rope_append)
// against the separate bias add, rope and kv_append: every output bit for bit,
// decode and prefill, with and without PDL. Since both steps of a pair append to their own
// caches from the same seed, the appended K and V compare too.
TEST_F(DecodeStepPrefillTest, TheFusedRopeAppendIsTheSeparateLaunchesBitForBit) {
  for (ModelSpec (*make)() : {llama_like, qwen2_like})
    for (int64_t prefill : {0, 5}) {
      const ModelSpec m = make();
      SCOPED_TRACE(m.name + ", prefill " + std::to_string(prefill));
      StepOptions o;
      o.batch = kBatch;
      o.context = kContext;
      o.prefill = prefill;
      o.bits = 16;
      o.seed = 3;
      o.fuse_rope_append = true;
      DecodeStep fused(m, o);
      o.fuse_rope_append = false;
      DecodeStep separate(m, o);
      const HostStepOutputs want = run_default_step(separate);
      for (bool pdl : {false, true}) {
        Dispatcher defaults(ops::cuda::dispatcher().backend(), default_tactics());
        fused.enqueue(nullptr, defaults, pdl);
        expect_same_outputs(fused.host_outputs(), want, pdl ? ", PDL" : "");
      }
    }
}

// A decode step whose gate/up linears take SiLU x up in their epilogue
// (StepLaunch::fuse_silu_mul) gives the separate launches' bits, bf16 and int4 g64, PDL off and
// on; the default gate/up tactics have the epilogue, so the fused path is what ran.
TEST_F(DecodeStepPrefillTest, TheSiluEpilogueIsTheSeparateLaunchesBitForBit) {
  for (ModelSpec (*make)() : {llama_like, qwen2_like})
    for (int bits : {16, 4}) {
      const ModelSpec m = make();
      SCOPED_TRACE(m.name + ", bits " + std::to_string(bits));
      DecodeStep step(m, small_step(bits, 4));
      Dispatcher defaults(ops::cuda::dispatcher().backend(), default_tactics());
      // The separate launches, whatever the step's options say.
      StepLaunch separate;
      separate.fuse_silu_mul = false;
      step.enqueue(nullptr, defaults, separate);
      const HostStepOutputs want = step.host_outputs();
      {
        const size_t weights = size_t(2 * m.inter * m.hidden);
        DeviceBuffer x(size_t(kBatch * m.hidden) * 2), w(weights * 2), params(weights / 64 * 2),
            y(size_t(kBatch * m.inter) * 2);
        ASSERT_TRUE(bits == 16
                        ? ops::cuda::gemv_bf16_silu_mul(x.data(), w.data(), y.data(), kBatch,
                                                        m.inter, m.hidden, nullptr, defaults)
                        : ops::cuda::quantized_linear_silu_mul(
                              x.data(), w.as<const uint32_t>(), params.data(), params.data(),
                              y.data(), kBatch, m.inter, m.hidden, bits, 64, nullptr, defaults));
      }
      for (bool pdl : {false, true}) {
        StepLaunch launch;
        launch.pdl = pdl;
        launch.fuse_silu_mul = true;
        step.enqueue(nullptr, defaults, launch);
        expect_same_outputs(step.host_outputs(), want, pdl ? ", PDL" : "");
      }
    }
}

// A 4-bit decode step whose o_proj and down linears normalise their own outputs for the
// rmsnorm after them (StepLaunch::fuse_norm, their last CTA) gives the separate launches'
// bits, PDL off and on, Llama-like and Qwen2-like. The linears are pinned to a config of the
// fused kernel's slot, so that the fused path is what ran (checked on the o_proj shape).
TEST_F(DecodeStepPrefillTest, TheLinearsNormIsTheSeparateLaunchesBitForBit) {
  for (ModelSpec (*make)() : {llama_like, qwen2_like}) {
    const ModelSpec m = make();
    SCOPED_TRACE(m.name);
    DecodeStep step(m, small_step(4, 5));
    DispatcherOptions pinned = default_tactics();
    pinned.settings.use_cache = false;
    pinned.settings.tactics[tactic_env_name("cuda", "qmv.affine")] =
        "qmv.affine.mma:rows_per_cta=8,warps=4,warps_k=4,outputs_per_warp=16,split_k=1,ahead=2";
    Dispatcher d(ops::cuda::dispatcher().backend(), pinned);
    StepLaunch separate;
    separate.fuse_silu_mul = true;
    separate.fuse_norm = false;
    step.enqueue(nullptr, d, separate);
    const HostStepOutputs want = step.host_outputs();
    {
      const int64_t n = m.hidden, k = m.hq * m.head_dim;
      DeviceBuffer x(size_t(kBatch * k) * 2), q(size_t(n * k) / 2), params(size_t(n * k) / 64 * 2),
          y(size_t(kBatch * n) * 2), w(size_t(n) * 2), out(size_t(kBatch * n) * 2),
          counter(sizeof(unsigned));
      HONE_CUDA_CHECK(cudaMemset(counter.data(), 0, sizeof(unsigned)));
      ops::cuda::RmsnormTensors t;
      t.x = y.data();
      t.w = w.data();
      t.out = out.data();
      t.rows = kBatch;
      t.hidden = n;
      ASSERT_TRUE(ops::cuda::quantized_linear_rmsnorm(
          x.data(), q.as<const uint32_t>(), params.data(), params.data(), y.data(), kBatch, n, k, 4,
          64, t, counter.as<unsigned>(), nullptr, d));
      HONE_CUDA_CHECK(cudaDeviceSynchronize());
    }
    for (bool pdl : {false, true}) {
      StepLaunch launch;
      launch.pdl = pdl;
      launch.fuse_silu_mul = true;
      launch.fuse_norm = true;
      step.enqueue(nullptr, d, launch);
      expect_same_outputs(step.host_outputs(), want, pdl ? ", PDL" : "");
    }
  }
}

// The chain tactic early=1 (StepLaunch::early_trigger: rmsnorm lets the next kernel start at its
// start) gives the PDL-off step's bits, bf16 and int4 g64,
// Llama-like and Qwen2-like, over repeated enqueues (a race would show as a run that differs;
// `hone tune --model` and `hone step` check it over 1000 graph replays before it can be picked).
TEST_F(DecodeStepPrefillTest, TheEarlyTriggerIsThePdlOffStepBitForBit) {
  for (ModelSpec (*make)() : {llama_like, qwen2_like})
    for (int bits : {16, 4}) {
      const ModelSpec m = make();
      SCOPED_TRACE(m.name + ", " + std::to_string(bits) + " bits");
      DecodeStep step(m, small_step(bits, 6));
      Dispatcher defaults(ops::cuda::dispatcher().backend(), default_tactics());
      StepLaunch off;
      off.fuse_silu_mul = true;
      step.enqueue(nullptr, defaults, off);
      const HostStepOutputs want = step.host_outputs();
      StepLaunch early = off;
      early.pdl = true;
      early.early_trigger = true;
      for (int run = 0; run < 20; ++run) {
        step.enqueue(nullptr, defaults, early);
        expect_same_outputs(step.host_outputs(), want,
                            ", early trigger, run " + std::to_string(run));
      }
    }
}

// Every weight of two steps' host copies equal bit for bit (the bf16 ones, or q, scales and
// biases).
void expect_same_linear(const HostLinear &a, const HostLinear &b, const std::string &what) {
  expect_same_bits(a.w, b.w, what + " w");
  expect_same_bits(a.q, b.q, what + " q");
  expect_same_bits(a.scales, b.scales, what + " scales");
  expect_same_bits(a.biases, b.biases, what + " biases");
}

// `w` quantised by the host quantizer (hone quantize's) as the step's HostLinear.
HostLinear host_quantized(const HostLinear &w, int bits, int group) {
  const std::vector<double> values = w.values();
  const std::vector<float> f(values.begin(), values.end());
  ops::cpu::AffineQuantized q = ops::cpu::quantize_affine(f.data(), w.n, w.k, bits, group);
  HostLinear out;
  out.n = w.n;
  out.k = w.k;
  out.bits = bits;
  out.group = group;
  out.q = std::move(q.packed);
  out.scales = std::move(q.scales);
  out.biases = std::move(q.biases);
  return out;
}

TEST_F(DecodeStepExportTest, AnExportReadsBackAndLoadsAsTheStepsWeights) {
  for (ModelSpec (*make)() : {qwen2_like, llama_like}) {
    const ModelSpec m = make();
    SCOPED_TRACE(m.name);
    const std::filesystem::path dir = dir_ / m.name;
    StepOptions o;
    o.batch = kBatch;
    o.context = kContext;
    o.seed = 5;
    DecodeStep random(m, o);
    run_default_step(random); // an export follows a step (the cache's token `context` is set)
    export_decode_step(random, dir);
    const HostStep exported = download(random);

    // Read back through the reader: bit for bit.
    const Checkpoint file = Checkpoint::open(dir / "model.safetensors");
    for (int64_t i = 0; i < m.layers; ++i) {
      const HostLayer &l = exported.layers[size_t(i)];
      const LayerWeights w = layer_weights(file.files(), m, i);
      const std::string at = "exported layer " + std::to_string(i);
      expect_same_bits(w.qkv, l.qkv.w, at + " qkv");
      expect_same_bits(w.qkv_bias, l.qkv_bias, at + " qkv bias");
      expect_same_bits(w.o, l.o.w, at + " o");
      expect_same_bits(w.gate_up, l.gate_up.w, at + " gate_up");
      expect_same_bits(w.down, l.down.w, at + " down");
      expect_same_bits(w.norm1, l.norm1, at + " norm1");
      expect_same_bits(w.norm2, l.norm2, at + " norm2");
    }
    const SafetensorsFile st = SafetensorsFile::open(dir / "step.safetensors");
    const std::vector<int64_t> cache = {kBatch, kContext, m.hkv, m.head_dim};
    expect_same_bits(read_bf16({&st}, "model.layers.1.k_cache", cache), exported.layers[1].k_cache,
                     "exported k cache");
    expect_same_bits(read_bf16({&st}, "model.layers.1.v_cache", cache), exported.layers[1].v_cache,
                     "exported v cache");
    expect_same_bits(read_bf16({&st}, "input", {kBatch, m.hidden}), exported.inputs.input,
                     "exported input");

    // A checkpoint: the export itself where the lm_head is the embedding; else a sharded
    // directory of the export and a shard holding a random embedding.
    std::filesystem::path checkpoint = dir;
    std::vector<uint16_t> embedding = exported.head.lm_head.w;
    if (!m.tie_embeddings) {
      checkpoint = dir_ / (m.name + "-sharded");
      std::filesystem::create_directories(checkpoint);
      std::filesystem::copy_file(dir / "model.safetensors",
                                 checkpoint / "model-00001-of-00002.safetensors");
      for (uint16_t &v : embedding)
        v = uint16_t(v ^ 0x8000); // any other table
      SafetensorsWriter w(checkpoint / "model-00002-of-00002.safetensors",
                          {{"model.embed_tokens.weight", "BF16", {m.vocab, m.hidden}}});
      w.write("model.embed_tokens.weight", embedding.data(), embedding.size() * 2);
      w.finish();
      std::ofstream index(checkpoint / "model.safetensors.index.json");
      index << R"({"weight_map": {"model.embed_tokens.weight": "model-00002-of-00002.safetensors")";
      for (const std::string &name : file.files()[0]->names())
        index << ", \"" << name << "\": \"model-00001-of-00002.safetensors\"";
      index << "}}\n";
    }

    for (int bits : {16, 4}) {
      SCOPED_TRACE("bits " + std::to_string(bits));
      StepOptions lo = o;
      lo.bits = bits;
      lo.group = 64;
      lo.weights = checkpoint.string();
      DecodeStep loaded(m, lo);
      const HostStep state = download(loaded);
      for (int64_t i = 0; i < m.layers; ++i) {
        const HostLayer &a = state.layers[size_t(i)], &b = exported.layers[size_t(i)];
        const std::string at = "layer " + std::to_string(i);
        const auto want = [&](const HostLinear &w) {
          return bits == 16 ? w : host_quantized(w, bits, 64);
        };
        expect_same_linear(a.qkv, want(b.qkv), at + " qkv");
        expect_same_linear(a.o, want(b.o), at + " o");
        expect_same_linear(a.gate_up, want(b.gate_up), at + " gate_up");
        expect_same_linear(a.down, want(b.down), at + " down");
        expect_same_bits(a.qkv_bias, b.qkv_bias, at + " qkv bias");
        expect_same_bits(a.norm1, b.norm1, at + " norm1");
        expect_same_bits(a.norm2, b.norm2, at + " norm2");
      }
      expect_same_bits(state.head.final_norm, exported.head.final_norm, "final norm");
      expect_same_linear(state.head.lm_head,
                         bits == 16 ? exported.head.lm_head
                                    : host_quantized(exported.head.lm_head, bits, 64),
                         "lm_head");
      // The input is the embedding of the step's tokens.
      ASSERT_EQ(state.inputs.tokens.size(), size_t(kBatch));
      for (int64_t b = 0; b < kBatch; ++b) {
        const int32_t t = state.inputs.tokens[size_t(b)];
        ASSERT_GE(t, 0);
        ASSERT_LT(t, m.vocab);
        EXPECT_TRUE(std::equal(embedding.begin() + t * m.hidden,
                               embedding.begin() + (t + 1) * m.hidden,
                               state.inputs.input.begin() + b * m.hidden))
            << "request " << b << ", token " << t;
      }
      const HostStepOutputs got = run_default_step(loaded);
      expect_matches_reference(m.name + (bits == 16 ? " loaded bf16" : " loaded int4_g64"), loaded,
                               got);
    }
  }
}

TEST_F(DecodeStepExportTest, ACheckpointOfAnotherShapeIsNamed) {
  const ModelSpec m = llama_like();
  StepOptions o;
  o.batch = 1;
  o.context = 16;
  DecodeStep random(m, o);
  export_decode_step(random, dir_);
  ModelSpec wider = m;
  wider.inter = 2048;
  o.weights = dir_.string();
  try {
    DecodeStep loaded(wider, o);
    ADD_FAILURE() << "a checkpoint of intermediate 1024 loaded as 2048";
  } catch (const Error &e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_argument) << e.what();
    EXPECT_NE(std::string(e.what()).find(
                  "tensor 'model.layers.0.mlp.gate_proj.weight': shape [1024,512], the "
                  "model's is [2048,512]"),
              std::string::npos)
        << e.what();
  }
}

TEST_F(DecodeStepExportTest, TheDeviceQuantizerIsTheHostOneBitForBit) {
  // Random rows, a constant group (scale 0), groups of +-0 only, and values on exact .5 ties of
  // (w - bias) / scale.
  for (int bits : {4, 8})
    for (int group : {32, 64, 128}) {
      SCOPED_TRACE("bits " + std::to_string(bits) + ", group " + std::to_string(group));
      const int64_t n = 48, k = 256;
      std::vector<uint16_t> w(size_t(n * k));
      uint64_t x = 0x9e3779b97f4a7c15ull * uint64_t(bits * group);
      for (uint16_t &v : w) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        v = float_to_bf16(float(int64_t(x >> 40) - (1 << 23)) * 0x1p-23f);
      }
      std::fill_n(w.begin(), group, float_to_bf16(0.25f));
      for (int i = 0; i < group; ++i)
        w[size_t(k + i)] = i % 2 ? 0x8000 : 0x0000;
      // Min 0 and max 7.5 (4 bits) or 127.5 (8 bits): scale 0.5, and every other value an odd
      // multiple of 0.25, so that (w - bias) / scale lies on a tie j + 0.5 (rounded to even).
      w[size_t(2 * k)] = 0;
      w[size_t(2 * k + 1)] = float_to_bf16(bits == 4 ? 7.5f : 127.5f);
      for (int i = 2; i < group; ++i)
        w[size_t(2 * k + i)] = float_to_bf16(0.25f * float(2 * (i % 15) + 1));
      std::vector<float> f(w.size());
      for (size_t i = 0; i < w.size(); ++i)
        f[i] = bf16_to_float(w[i]);
      const ops::cpu::AffineQuantized want = ops::cpu::quantize_affine(f.data(), n, k, bits, group);

      DeviceBuffer dw(w.size() * 2), dq(want.packed.size() * 4), ds(want.scales.size() * 2),
          db(want.biases.size() * 2);
      HONE_CUDA_CHECK(cudaMemcpy(dw.data(), w.data(), dw.size(), cudaMemcpyHostToDevice));
      quantize_affine_bf16(dw.data(), dq.as<uint32_t>(), ds.data(), db.data(), n, k, bits, group,
                           nullptr);
      HONE_CUDA_CHECK(cudaDeviceSynchronize());
      std::vector<uint32_t> q(want.packed.size());
      std::vector<uint16_t> scales(want.scales.size()), biases(want.biases.size());
      HONE_CUDA_CHECK(cudaMemcpy(q.data(), dq.data(), dq.size(), cudaMemcpyDeviceToHost));
      HONE_CUDA_CHECK(cudaMemcpy(scales.data(), ds.data(), ds.size(), cudaMemcpyDeviceToHost));
      HONE_CUDA_CHECK(cudaMemcpy(biases.data(), db.data(), db.size(), cudaMemcpyDeviceToHost));
      expect_same_bits(q, want.packed, "q words");
      expect_same_bits(scales, want.scales, "scales");
      expect_same_bits(biases, want.biases, "biases");
    }
}

} // namespace
} // namespace hone::model
