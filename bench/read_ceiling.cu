// Read ceilings: how fast a cold-L2 read of exactly one weight matrix can go, by access
// pattern, so that a GEMV kernel's bandwidth fraction splits into "the size and pattern" and
// "the kernel". Loads only (every value folds into a sink), no arithmetic.
//
//   stream  grid-stride 16-byte loads over the whole matrix (the bandwidth probe's pattern)
//   rows    one warp per 16 rows and K slice; lane (g, t) loads 16 bytes of rows g and g + 8
//           per 64-byte chunk of each row (the gemv.bf16 / qmv.affine mma pattern), J chunks
//           in flight per lane, k = slices of K
//   lines   the same split, but one warp instruction reads 512 contiguous bytes of one row
//   tma     a persistent grid of one producer lane and one consumer warp per CTA: TMA boxes of
//           box_words 32-bit words x box_rows rows into a ring of `stages` boxes, over CTA
//           ranges of 16-row units (short tiles in 16-row boxes), as the GEMV family's ring
//           kernel (src/cuda/kernels/common/weight_ring.cuh) walks its weights; the consumer
//           reads one word per lane of each box. It says what a box shape can read, without the
//           kernel's arithmetic.
//
// Shapes are rows x bytes per row; the default set is the weight matrices of the gemv.bf16
// matrix (bf16: n x 2k) and of the qmv.affine matrix (int4: n x k/2, packed words only).
// Cold L2: every batch cycles through copies spanning >= 8x the L2 (cold_copies, as the
// tuner; at 2x part of a copy was still in L2 when it came round again); CUDA-graph batches of 40
// launches, 7 samples round-robin, median. Built by CMake (bench/cuda.cmake) or standalone:
//   nvcc -std=c++20 -O3 -gencode=arch=compute_90,code=sm_90 -Iinclude -Isrc -Itests/device
//     bench/read_ceiling.cu -o read_ceiling
//   ./read_ceiling [--shapes 14336x8192,...] [--params GROUP] [--json FILE]
// --params GROUP adds the qrows patterns: each shape as int4 words (2 x bytes values a row) with
// bf16 group parameters, read as qmv.affine's mma kernels read them (qtile_kernel).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <cuda_runtime.h>
#include <nlohmann/json.hpp>

#include "cuda/kernels/common/ptx.cuh"
#include "cuda/kernels/common/tensor_map.h"
#include "cuda/kernels/common/weight_stream.cuh"
#include "kernel_harness.cuh"

namespace hone::cuda::read_ceiling {

using namespace harness;       // NOLINT
using namespace kernel_detail; // NOLINT

__device__ __forceinline__ void sink_fold(uint32_t acc, uint32_t *sink) {
  if (acc == 0x9e3779b9u) // never true for the fill below; keeps every load alive
    *sink = acc;
}

template <int U> __global__ void stream_kernel(const uint4 *p, size_t count, uint32_t *sink) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  uint32_t acc = 0;
  for (; i + (U - 1) * stride < count; i += U * stride) {
    uint4 v[U];
#pragma unroll
    for (int j = 0; j < U; ++j)
      v[j] = ld_stream(p + i + j * stride);
#pragma unroll
    for (int j = 0; j < U; ++j)
      acc ^= v[j].x ^ v[j].y ^ v[j].z ^ v[j].w;
  }
  for (; i < count; i += stride) {
    const uint4 v = ld_stream(p + i);
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  sink_fold(acc, sink);
}

// blockIdx.x: groups of `warps` 16-row tiles; blockIdx.y: K slice of slice_bytes per row.
template <int J, bool LINES>
__global__ void tile_kernel(const uint8_t *p, int n, int row_bytes, int slice_bytes,
                            uint32_t *sink) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int m = (blockIdx.x * (blockDim.x >> 5) + warp) * 16;
  const int k0 = blockIdx.y * slice_bytes;
  const int k1 = min(k0 + slice_bytes, row_bytes);
  uint32_t acc = 0;
  if (!LINES) {
    const int g = lane >> 2, t = lane & 3;
    const uint8_t *r0 = p + static_cast<size_t>(min(m + g, n - 1)) * row_bytes + 16 * t;
    const uint8_t *r1 = p + static_cast<size_t>(min(m + g + 8, n - 1)) * row_bytes + 16 * t;
    int k = k0;
    for (; k + 64 * J <= k1; k += 64 * J) {
      uint4 a[J], b[J];
#pragma unroll
      for (int j = 0; j < J; ++j) {
        a[j] = ld_stream(r0 + k + 64 * j);
        b[j] = ld_stream(r1 + k + 64 * j);
      }
#pragma unroll
      for (int j = 0; j < J; ++j)
        acc ^= a[j].x ^ a[j].y ^ a[j].z ^ a[j].w ^ b[j].x ^ b[j].y ^ b[j].z ^ b[j].w;
    }
    for (; k < k1; k += 64) {
      const uint4 a = ld_stream(r0 + k), b = ld_stream(r1 + k);
      acc ^= a.x ^ a.y ^ a.z ^ a.w ^ b.x ^ b.y ^ b.z ^ b.w;
    }
  } else {
    // 16 rows x slice: walk it as rows of 512-byte lines, J lines in flight.
    const int lines_per_row = (k1 - k0 + 511) / 512;
    const int total = 16 * lines_per_row;
    int i = 0;
    for (; i + J <= total; i += J) {
      uint4 a[J];
#pragma unroll
      for (int j = 0; j < J; ++j) {
        const int li = i + j, r = min(m + li / lines_per_row, n - 1);
        const int k = k0 + (li % lines_per_row) * 512 + 16 * lane;
        a[j] = k < k1 ? ld_stream(p + static_cast<size_t>(r) * row_bytes + k) : uint4{};
      }
#pragma unroll
      for (int j = 0; j < J; ++j)
        acc ^= a[j].x ^ a[j].y ^ a[j].z ^ a[j].w;
    }
    for (; i < total; ++i) {
      const int r = min(m + i / lines_per_row, n - 1);
      const int k = k0 + (i % lines_per_row) * 512 + 16 * lane;
      const uint4 a = k < k1 ? ld_stream(p + static_cast<size_t>(r) * row_bytes + k) : uint4{};
      acc ^= a.x ^ a.y ^ a.z ^ a.w;
    }
  }
  sink_fold(acc, sink);
}

// The int4 words of an n x (2 row_bytes) qmv.affine matrix with its group parameters, read as
// the mma kernels read them: a warp owns MT 16-row tiles, lane (g, t) loads 16 bytes of rows g
// and g + 8 of each tile per 64-byte chunk (values 2k + 32t .. + 31 of the row), J chunks in
// flight, and beside each word its group's parameters. PARAMS 0: words only; 1: bf16 scales and
// biases in two [n, groups] arrays, one 2-byte load each (today's layout); 2: one [n, groups]
// array of (scale, bias) pairs, one 4-byte load; 3: the pairs tile-major, [n / 16][groups][16]
// (a 16-row tile's pairs of one group are 64 contiguous bytes), one 4-byte load; 4: today's two
// arrays, but one vector load a row per J chunks for every group they span (8 bytes at J 2, 16
// at J 4; group 64 only) in place of one 2-byte load a chunk; 5: today's two arrays, each warp's
// rows' parameters for all of K staged once into shared memory as (scale, bias) pairs (coalesced
// 4-byte loads, two groups a lane), then read from there each chunk. Dynamic shared memory (unused
// but by p5) caps the CTAs an SM holds, as a kernel's registers would. 6 and 7: today's two
// arrays and loads (p1), each load asking L2 to fetch the 128 (p6) or 256 (p7) bytes around it
// (the words' loads ask for 256), so that a row's later groups are in L2 when their chunk comes.
// 8: today's two arrays, each warp's rows' scales and biases for all of K copied into shared
// memory by cp.async (16 bytes a copy, L2 only) issued before the first words, waited for only
// after the first J chunks' word loads are out, then read as p4's vectors (one per row and J
// chunks) from shared memory: the staging of p5 without its bubble, and p4's instruction count
// without its L1 wavefronts (group 64 only, k1).
template <int BYTES> __device__ __forceinline__ uint32_t ld_param_l2(const uint16_t *p) {
  uint16_t v;
  if constexpr (BYTES == 128)
    asm("ld.global.nc.L2::128B.u16 %0, [%1];" : "=h"(v) : "l"(p));
  else
    asm("ld.global.nc.L2::256B.u16 %0, [%1];" : "=h"(v) : "l"(p));
  return v;
}

template <int J, int MT, int PARAMS>
__global__ void qtile_kernel(const uint8_t *p, const uint16_t *scales, const uint16_t *biases,
                             int n, int row_bytes, int group_shift, uint32_t *sink) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int m = (blockIdx.x * (blockDim.x >> 5) + warp) * 16 * MT;
  const int g = lane >> 2, t = lane & 3;
  const int groups = (2 * row_bytes) >> group_shift;
  const uint8_t *r[MT][2];
  int row[MT][2];
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      row[mt][h] = min(m + 16 * mt + 8 * h + g, n - 1);
      r[mt][h] = p + static_cast<size_t>(row[mt][h]) * row_bytes + 16 * t;
    }
  // PARAMS 5: the warp's 16 MT rows' pairs, `stride` words a row (groups + 2: rows g and g + 1
  // of neighbouring groups fall in different banks).
  extern __shared__ uint32_t staged[];
  const int stride = groups + 2;
  uint32_t *mine = staged + warp * 16 * MT * stride;
  if constexpr (PARAMS == 5) {
    const int half = groups / 2, total = 16 * MT * half;
#pragma unroll 8
    for (int e = lane; e < total; e += 32) {
      const int rr = e / half, i = 2 * (e - rr * half);
      const size_t pi = static_cast<size_t>(min(m + rr, n - 1)) * groups + i;
      const uint32_t s2 = __ldg(reinterpret_cast<const uint32_t *>(scales + pi));
      const uint32_t b2 = __ldg(reinterpret_cast<const uint32_t *>(biases + pi));
      mine[rr * stride + i] = (s2 & 0xffffu) | (b2 << 16);
      mine[rr * stride + i + 1] = (s2 >> 16) | (b2 & 0xffff0000u);
    }
    __syncwarp();
  }
  // PARAMS 8: the warp's 16 MT rows' scale row and bias row (groups x 2 bytes each, 16-byte
  // pieces), `pstride` bytes a row (one 16-byte pad, so rows g and g + 1 start 4 banks apart).
  const int pstride = 4 * groups + 16;
  uint8_t *pmine = reinterpret_cast<uint8_t *>(staged) + warp * 16 * MT * pstride;
  if constexpr (PARAMS == 8) {
    const int pieces = groups / 8, total = 16 * MT * 2 * pieces; // 16-byte pieces
    for (int e = lane; e < total; e += 32) {
      const int rr = e / (2 * pieces), rest = e - rr * 2 * pieces;
      const int arr = rest / pieces, piece = rest - arr * pieces;
      const uint16_t *src =
          (arr ? biases : scales) + static_cast<size_t>(min(m + rr, n - 1)) * groups + 8 * piece;
      copy_weight_async(pmine + rr * pstride + arr * 2 * groups + 16 * piece, src);
    }
    copy_async_commit();
  }
  uint32_t acc = 0;
  for (int k = 0; k + 64 * J <= row_bytes; k += 64 * J) {
    uint4 a[J][MT][2];
    // PARAMS 4: the J chunks' groups of each row, one vector of scales and one of biases.
    uint4 vs[MT][2] = {}, vb[MT][2] = {};
    if constexpr (PARAMS == 4) {
      const int first = (2 * k) >> group_shift;
#pragma unroll
      for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const size_t pi = static_cast<size_t>(row[mt][h]) * groups + first;
          if constexpr (J == 4) {
            vs[mt][h] = __ldg(reinterpret_cast<const uint4 *>(scales + pi));
            vb[mt][h] = __ldg(reinterpret_cast<const uint4 *>(biases + pi));
          } else {
            const uint2 s2 = __ldg(reinterpret_cast<const uint2 *>(scales + pi));
            const uint2 b2 = __ldg(reinterpret_cast<const uint2 *>(biases + pi));
            vs[mt][h] = make_uint4(s2.x, s2.y, 0, 0);
            vb[mt][h] = make_uint4(b2.x, b2.y, 0, 0);
          }
        }
    }
    // Every load of the J chunks is issued before any value is used: the scale and the bias
    // land in registers of their own and are folded with the words after the loop.
    uint32_t qs[J][MT][2], qb[J][MT][2];
#pragma unroll
    for (int j = 0; j < J; ++j) {
      const int group = (2 * (k + 64 * j) + 32 * t) >> group_shift;
#pragma unroll
      for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          a[j][mt][h] = ld_stream(r[mt][h] + k + 64 * j);
          const size_t pi = static_cast<size_t>(row[mt][h]) * groups + group;
          const size_t tile_pi =
              (static_cast<size_t>(row[mt][h] >> 4) * groups + group) * 16 + (row[mt][h] & 15);
          qs[j][mt][h] = PARAMS == 1   ? __ldg(scales + pi)
                         : PARAMS == 2 ? __ldg(reinterpret_cast<const uint32_t *>(scales) + pi)
                         : PARAMS == 3 ? __ldg(reinterpret_cast<const uint32_t *>(scales) + tile_pi)
                         : PARAMS == 5 ? mine[(16 * mt + 8 * h + g) * stride + group]
                         : PARAMS == 6 ? ld_param_l2<128>(scales + pi)
                         : PARAMS == 7 ? ld_param_l2<256>(scales + pi)
                                       : 0u;
          qb[j][mt][h] = PARAMS == 1   ? __ldg(biases + pi)
                         : PARAMS == 6 ? ld_param_l2<128>(biases + pi)
                         : PARAMS == 7 ? ld_param_l2<256>(biases + pi)
                                       : 0u;
        }
    }
    if constexpr (PARAMS == 8) {
      if (k == 0) { // the staged parameters, once, after the first words are asked for
        copy_async_wait<0>();
        __syncwarp();
      }
      const int first = (2 * k) >> group_shift;
#pragma unroll
      for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const uint8_t *rowp = pmine + (16 * mt + 8 * h + g) * pstride + 2 * first;
          if constexpr (J == 4) {
            vs[mt][h] = *reinterpret_cast<const uint4 *>(rowp);
            vb[mt][h] = *reinterpret_cast<const uint4 *>(rowp + 2 * groups);
          } else {
            const uint2 s2 = *reinterpret_cast<const uint2 *>(rowp);
            const uint2 b2 = *reinterpret_cast<const uint2 *>(rowp + 2 * groups);
            vs[mt][h] = make_uint4(s2.x, s2.y, 0, 0);
            vb[mt][h] = make_uint4(b2.x, b2.y, 0, 0);
          }
        }
    }
#pragma unroll
    for (int j = 0; j < J; ++j)
#pragma unroll
      for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int h = 0; h < 2; ++h)
          acc ^= a[j][mt][h].x ^ a[j][mt][h].y ^ a[j][mt][h].z ^ a[j][mt][h].w ^ qs[j][mt][h] ^
                 (qb[j][mt][h] << 16);
    if constexpr (PARAMS == 4 || PARAMS == 8)
#pragma unroll
      for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int h = 0; h < 2; ++h)
          acc ^= vs[mt][h].x ^ vs[mt][h].y ^ vs[mt][h].z ^ vs[mt][h].w ^ vb[mt][h].x ^ vb[mt][h].y ^
                 vb[mt][h].z ^ vb[mt][h].w;
  }
  sink_fold(acc, sink);
}

// One CTA: warp 1 lane 0 copies, warp 0 consumes. CTA c owns the rows of the 16-row units
// [c U / C, (c + 1) U / C), walked in tiles of box_rows rows and, per tile, all of K in boxes of
// box_words words.
__global__ void __launch_bounds__(64)
    tma_ring_kernel(const __grid_constant__ CUtensorMap tile_map,
                    const __grid_constant__ CUtensorMap row16_map, int n, int row_words,
                    int box_words, int box_rows, int stages, uint32_t *sink) {
#if __CUDA_ARCH__ >= 900
  extern __shared__ __align__(128) uint8_t tma_shared[];
  uint64_t *bars = reinterpret_cast<uint64_t *>(tma_shared);
  const StageRing ring{bars, bars + stages, stages};
  const uint32_t stages_shared = shared_address(tma_shared + kStreamBarrierBytes);
  const int box_bytes = box_words * 4 * box_rows;
  const int units = (n + 15) / 16, ctas = static_cast<int>(gridDim.x);
  const int cta = static_cast<int>(blockIdx.x);
  const int row_begin = stream_first_tile(cta, ctas, units) * 16;
  const int row_end = min(stream_first_tile(cta + 1, ctas, units) * 16, n);
  const int lane = static_cast<int>(threadIdx.x) & 31;
  if (threadIdx.x == 0)
    ring.init(1, 1);
  __syncthreads();
  StageCursor q;
  uint32_t acc = 0;
  for (int m0 = row_begin; m0 < row_end; m0 += box_rows) {
    const int valid = min(box_rows, row_end - m0);
    const bool whole = valid == box_rows;
    const int boxes = (valid + 15) / 16;
    for (int kw = 0; kw < row_words; kw += box_words, q.advance(stages)) {
      const uint32_t stage = stages_shared + q.stage * box_bytes;
      if (threadIdx.x == 32) {
        ring.acquire_empty(q);
        ring.expect(q, static_cast<uint32_t>((whole ? box_rows : boxes * 16) * box_words * 4));
        if (whole)
          tma_load_2d(stage, &tile_map, kw, m0, ring.full_at(q));
        else
          for (int b = 0; b < boxes; ++b)
            tma_load_2d(stage + b * 16 * box_words * 4, &row16_map, kw, m0 + b * 16,
                        ring.full_at(q));
      } else if (threadIdx.x < 32) {
        ring.wait_full(q);
        uint32_t v;
        asm volatile("ld.shared.u32 %0, [%1];" : "=r"(v) : "r"(stage + 4 * lane) : "memory");
        acc ^= v;
        ring.release_warp(q, lane);
      }
    }
  }
  sink_fold(acc, sink);
#endif
}

__global__ void fill_kernel(uint32_t *p, size_t count) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    p[i] = static_cast<uint32_t>(i * 2654435761u) | 1u;
}

struct Candidate {
  std::string pattern; // stream, rows, lines, tma
  int j = 0, slices = 0, ctas = 0;
  std::function<void(int, cudaStream_t)> launch;
  int box_words = 0, box_rows = 0, stages = 0; // tma
  size_t extra_bytes = 0;                      // qrows: the group parameters read beside
  std::string name() const {
    char buf[64];
    if (pattern == "stream")
      std::snprintf(buf, sizeof buf, "stream %d CTA", ctas);
    else if (pattern == "tma")
      std::snprintf(buf, sizeof buf, "tma %dBx%d s%d (%d CTA)", box_words * 4, box_rows, stages,
                    ctas);
    else
      std::snprintf(buf, sizeof buf, "%s J%d k%d (%d CTA)", pattern.c_str(), j, slices, ctas);
    return buf;
  }
};

} // namespace hone::cuda::read_ceiling

int main(int argc, char **argv) {
  using namespace hone::cuda::read_ceiling; // NOLINT
  using namespace hone::cuda::harness;      // NOLINT
  using hone::cuda::encode_2d;
  // gemv.bf16 matrix (n x 2k bytes), then qmv.affine int4 (n x k/2)
  std::vector<int> shapes = {4096, 8192, 6144,  8192, 14336, 8192, 4096, 28672, 8960,
                             3072, 1536, 17920, 2048, 4096,  4096, 2048, 14336, 2048,
                             4096, 7168, 8960,  768,  1536,  4480};
  const char *json_path = nullptr;
  int params_group = 0; // --params GROUP: the qrows patterns, words + group parameters
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--shapes") && i + 1 < argc)
      shapes = parse_list(argv[++i]);
    else if (!std::strcmp(argv[i], "--params") && i + 1 < argc) {
      params_group = std::atoi(argv[++i]);
      if (params_group != 32 && params_group != 64 && params_group != 128) {
        std::fprintf(stderr, "read_ceiling: --params %s: the group must be 32, 64 or 128\n",
                     argv[i]);
        return 2;
      }
    } else if (!std::strcmp(argv[i], "--json") && i + 1 < argc)
      json_path = argv[++i];
    else {
      std::fprintf(stderr, "read_ceiling: unknown argument '%s'\n", argv[i]);
      return 2;
    }
  }
  if (shapes.empty() || shapes.size() % 2) {
    std::fprintf(stderr, "read_ceiling: --shapes needs ROWSxBYTES pairs\n");
    return 2;
  }
  for (size_t i = 0; i < shapes.size(); i += 2)
    if (shapes[i] < 16 || shapes[i + 1] < 64 || shapes[i + 1] % 64) {
      std::fprintf(stderr, "read_ceiling: shape %dx%d: need >= 16 rows and a multiple of 64 "
                   "bytes per row\n", shapes[i], shapes[i + 1]);
      return 2;
    }
  cudaStream_t s;
  KT_CHECK(cudaStreamCreate(&s));
  cudaEvent_t e0, e1;
  KT_CHECK(cudaEventCreate(&e0));
  KT_CHECK(cudaEventCreate(&e1));
  int sms = 0, l2 = 0;
  KT_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  KT_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0));
  cudaDeviceProp prop{};
  KT_CHECK(cudaGetDeviceProperties(&prop, 0));
  const double bw = measure_read_bandwidth(s, e0, e1);
  std::printf("device: %s, %d SMs, L2 %d MB\n", prop.name, sms, l2 >> 20);
  std::printf("read bandwidth (2 GiB stream): %.0f GB/s\n", bw / 1e9);
  std::printf("method: loads only, cold L2 (copies >= 8x L2), graph batches of 40, median of 7 "
              "round-robin samples\n");
  DeviceMem sink(4);
  nlohmann::json results = nlohmann::json::array();
  struct Best {
    int n, row_bytes;
    double stream_us, rows_us;
    std::string rows_name;
  };
  std::vector<Best> bests;
  std::printf("%-12s %-32s %9s %7s\n", "rows x B", "pattern", "us", "% bw");
  for (size_t si = 0; si + 1 < shapes.size(); si += 2) {
    const int n = shapes[si], row_bytes = shapes[si + 1];
    const size_t bytes = static_cast<size_t>(n) * row_bytes;
    const int copies = cold_copies(static_cast<size_t>(l2), bytes);
    DeviceMem mem(bytes * copies);
    fill_kernel<<<1024, 256, 0, s>>>(static_cast<uint32_t *>(mem.p), bytes * copies / 4);
    KT_CHECK(cudaGetLastError());
    const uint8_t *base = static_cast<const uint8_t *>(mem.p);
    uint32_t *sink_p = static_cast<uint32_t *>(sink.p);
    std::vector<Candidate> cands;
    for (int per_sm : {2, 4, 8}) {
      const int ctas = sms * per_sm;
      cands.push_back({"stream", 0, 0, ctas, [=](int c, cudaStream_t st) {
                         stream_kernel<4><<<ctas, 512, 0, st>>>(
                             reinterpret_cast<const uint4 *>(base + bytes * c), bytes / 16, sink_p);
                       }});
    }
    const int tiles = (n + 15) / 16;
    for (int slices : {1, 2, 4, 8, 16}) {
      if (row_bytes % (64 * slices))
        continue;
      const int slice_bytes = row_bytes / slices;
      const dim3 grid((tiles + 3) / 4, slices);
      const int ctas = static_cast<int>(grid.x * grid.y);
      auto add = [&](auto kernel, const char *pattern, int j) {
        cands.push_back({pattern, j, slices, ctas, [=](int c, cudaStream_t st) {
                           kernel<<<grid, 128, 0, st>>>(base + bytes * c, n, row_bytes,
                                                        slice_bytes, sink_p);
                         }});
      };
      add(tile_kernel<2, false>, "rows", 2);
      add(tile_kernel<4, false>, "rows", 4);
      add(tile_kernel<8, true>, "lines", 8);
    }
    // qrows (--params GROUP): the shape as int4 words with their group parameters, the mma
    // kernels' lane pattern, MT tiles a warp, words only or with either parameter layout, the
    // CTAs an SM holds uncapped or capped at two (as 184 registers of 128 threads cap them).
    std::unique_ptr<DeviceMem> params;
    if (params_group) {
      const int shift = params_group == 32 ? 5 : params_group == 64 ? 6 : 7;
      const size_t groups = static_cast<size_t>(2 * row_bytes) >> shift;
      const size_t param_bytes = 4 * groups * static_cast<size_t>(n); // scale + bias, bf16
      params = std::make_unique<DeviceMem>(param_bytes * copies);
      fill_kernel<<<1024, 256, 0, s>>>(static_cast<uint32_t *>(params->p),
                                       param_bytes * copies / 4);
      KT_CHECK(cudaGetLastError());
      const uint8_t *pbase = static_cast<const uint8_t *>(params->p);
      int smem_sm = 0;
      KT_CHECK(cudaDeviceGetAttribute(&smem_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, 0));
      auto addq = [&](auto kernel, int mt, int j, int pm, int occ) {
        if (row_bytes % (64 * j))
          return;
        const int warps_total = (tiles + mt - 1) / mt, ctas = (warps_total + 3) / 4;
        // Shared memory that lets `occ` CTAs fit an SM and not one more (8 KB under the even
        // share leaves room for the 1 KB the runtime reserves a CTA).
        int cap = occ ? smem_sm / occ - 8192 : 0;
        if (pm == 5 || pm == 8) { // the staged parameters: 4 warps x 16 MT rows of each
          const int staged = pm == 5 ? 4 * 16 * mt * static_cast<int>(groups + 2) * 4
                                     : 4 * 16 * mt * static_cast<int>(4 * groups + 16);
          if (staged > (occ ? cap : smem_sm - 8192))
            return;
          cap = std::max(cap, staged);
        }
        KT_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, cap));
        char name[40];
        std::snprintf(name, sizeof name, "qrows mt%d p%d occ%d", mt, pm, occ);
        Candidate c{name, j, 1, ctas, {}};
        c.extra_bytes = pm ? param_bytes : 0;
        c.launch = [=](int copy, cudaStream_t st) {
          const uint8_t *pc = pbase + param_bytes * copy;
          kernel<<<ctas, 128, cap, st>>>(base + bytes * copy,
                                         reinterpret_cast<const uint16_t *>(pc),
                                         reinterpret_cast<const uint16_t *>(pc + param_bytes / 2),
                                         n, row_bytes, shift, sink_p);
        };
        cands.push_back(c);
      };
      addq(qtile_kernel<2, 1, 0>, 1, 2, 0, 0);
      addq(qtile_kernel<2, 1, 1>, 1, 2, 1, 0);
      addq(qtile_kernel<2, 1, 2>, 1, 2, 2, 0);
      addq(qtile_kernel<2, 2, 0>, 2, 2, 0, 0);
      addq(qtile_kernel<2, 2, 1>, 2, 2, 1, 0);
      addq(qtile_kernel<2, 2, 0>, 2, 2, 0, 2);
      addq(qtile_kernel<2, 2, 1>, 2, 2, 1, 2);
      addq(qtile_kernel<2, 2, 2>, 2, 2, 2, 2);
      addq(qtile_kernel<4, 2, 1>, 2, 4, 1, 2);
      addq(qtile_kernel<4, 1, 1>, 1, 4, 1, 0);
      // The parameter layouts and load schedules a kernel could take instead (p3, p4).
      if (n % 16 == 0) { // whole tiles: the tile-major array has n x groups pairs
        addq(qtile_kernel<2, 1, 3>, 1, 2, 3, 0);
        addq(qtile_kernel<2, 2, 3>, 2, 2, 3, 2);
      }
      addq(qtile_kernel<2, 1, 6>, 1, 2, 6, 0);
      addq(qtile_kernel<2, 1, 7>, 1, 2, 7, 0);
      addq(qtile_kernel<2, 2, 7>, 2, 2, 7, 2);
      if (groups % 2 == 0) { // two groups a lane's 4-byte load
        addq(qtile_kernel<2, 1, 5>, 1, 2, 5, 0);
        addq(qtile_kernel<4, 1, 5>, 1, 4, 5, 0);
        addq(qtile_kernel<2, 2, 5>, 2, 2, 5, 2);
      }
      if (params_group == 64 && groups % 8 == 0) { // 16-byte aligned vectors of 8 groups
        addq(qtile_kernel<2, 1, 4>, 1, 2, 4, 0);
        addq(qtile_kernel<4, 1, 4>, 1, 4, 4, 0);
        addq(qtile_kernel<2, 2, 4>, 2, 2, 4, 2);
        addq(qtile_kernel<2, 1, 8>, 1, 2, 8, 0);
        addq(qtile_kernel<4, 1, 8>, 1, 4, 8, 0);
        addq(qtile_kernel<2, 2, 8>, 2, 2, 8, 2);
      }
    }
    // TMA boxes of 64-256 bytes a row, 8-32 KB a box, 4 stages, one or two CTAs per SM.
    std::vector<std::shared_ptr<std::vector<CUtensorMap>>> maps;
    if (row_bytes % 256 == 0) {
      KT_CHECK(cudaFuncSetAttribute(tma_ring_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    kStreamBarrierBytes + 4 * 32768));
      const int box_shapes[][2] = {{16, 256}, {32, 128}, {32, 256}, {64, 64}, {64, 128}};
      for (const auto &bs : box_shapes)
        for (int per_sm : {1, 2}) {
          const int box_words = bs[0], box_rows = bs[1], stages = 4;
          const int box_bytes = box_words * 4 * box_rows;
          if (per_sm == 2 && box_bytes > 16384)
            continue;
          auto m = std::make_shared<std::vector<CUtensorMap>>(2 * copies);
          bool ok = true;
          for (int c = 0; c < copies; ++c)
            ok = ok &&
                 encode_2d(&(*m)[2 * c], CU_TENSOR_MAP_DATA_TYPE_UINT32, base + bytes * c,
                           row_bytes / 4, n, row_bytes, box_words, box_rows,
                           CU_TENSOR_MAP_SWIZZLE_NONE) &&
                 encode_2d(&(*m)[2 * c + 1], CU_TENSOR_MAP_DATA_TYPE_UINT32, base + bytes * c,
                           row_bytes / 4, n, row_bytes, box_words, 16, CU_TENSOR_MAP_SWIZZLE_NONE);
          if (!ok) {
            std::fprintf(stderr, "read_ceiling: tensor map refused (%dx%d)\n", box_words, box_rows);
            continue;
          }
          maps.push_back(m);
          const int ctas = std::min(sms * per_sm, tiles);
          const size_t shared = kStreamBarrierBytes + static_cast<size_t>(stages) * box_bytes;
          Candidate c{"tma", 0, 0, ctas, {}, box_words, box_rows, stages};
          c.launch = [=](int copy, cudaStream_t st) {
            tma_ring_kernel<<<ctas, 64, shared, st>>>((*m)[2 * copy], (*m)[2 * copy + 1], n,
                                                      row_bytes / 4, box_words, box_rows, stages,
                                                      sink_p);
          };
          cands.push_back(c);
        }
    }
    const int batch = 40;
    std::vector<std::unique_ptr<GraphBatch>> graphs;
    for (const Candidate &c : cands)
      graphs.push_back(std::make_unique<GraphBatch>(c.launch, batch, copies, s));
    for (auto &g : graphs) // warm-up
      g->time(s, e0, e1);
    std::vector<std::vector<double>> t(cands.size());
    for (int rep = 0; rep < 7; ++rep)
      for (size_t i = 0; i < cands.size(); ++i) {
        const size_t k = (i + static_cast<size_t>(rep)) % cands.size(); // rotate the start
        t[k].push_back(graphs[k]->time(s, e0, e1) / batch);
      }
    Best best{n, row_bytes, 1e30, 1e30, ""};
    for (size_t i = 0; i < cands.size(); ++i) {
      const double sec = median(t[i]);
      const Candidate &c = cands[i];
      const double read = static_cast<double>(bytes + c.extra_bytes);
      std::printf("%6dx%-5d %-32s %9.2f %6.1f%%\n", n, row_bytes, c.name().c_str(), sec * 1e6,
                  100.0 * read / sec / bw);
      results.push_back({{"n", n},
                         {"row_bytes", row_bytes},
                         {"bytes", bytes + c.extra_bytes},
                         {"pattern", c.pattern},
                         {"j", c.j},
                         {"k_slices", c.slices},
                         {"ctas", c.ctas},
                         {"box_words", c.box_words},
                         {"box_rows", c.box_rows},
                         {"stages", c.stages},
                         {"median_s", sec},
                         {"samples_s", t[i]},
                         {"fraction_of_read_bandwidth", read / sec / bw}});
      if (c.pattern == "stream")
        best.stream_us = std::min(best.stream_us, sec * 1e6);
      else if (c.pattern == "tma" || c.pattern.rfind("qrows", 0) == 0)
        continue; // its own rows in the table above, not the GEMV patterns' best
      else if (sec * 1e6 < best.rows_us)
        best.rows_us = sec * 1e6, best.rows_name = c.name();
    }
    bests.push_back(best);
    KT_CHECK(cudaStreamSynchronize(s));
  }
  std::printf("\n| N | bytes/row | MB | stream us | %% bw | best split us | %% bw | best split |\n"
              "| --- | --- | --- | --- | --- | --- | --- | --- |\n");
  for (const Best &b : bests) {
    const double mb = static_cast<double>(b.n) * b.row_bytes / 1e6;
    std::printf("| %d | %d | %.1f | %.2f | %.1f | %.2f | %.1f | %s |\n", b.n, b.row_bytes, mb,
                b.stream_us, 100.0 * mb / b.stream_us / (bw / 1e12), b.rows_us,
                100.0 * mb / b.rows_us / (bw / 1e12), b.rows_name.c_str());
  }
  if (json_path) {
    std::ofstream out(json_path);
    out << nlohmann::json{{"benchmark", "read_ceiling"},
                          {"device", prop.name},
                          {"read_bandwidth_bytes_per_s", bw},
                          {"method", "loads only, cold L2, cuda graph batch 40, median of 7"},
                          {"results", results}}
               .dump(1)
        << "\n";
    if (!out) {
      std::fprintf(stderr, "read_ceiling: cannot write %s\n", json_path);
      return 1;
    }
  }
  return 0;
}
