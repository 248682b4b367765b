// decode.paged host logic: tactic conversion, page-table validation, the split of a batch, the
// static default kv_chunk and the tuning candidates. No device: CI tests all of it
// (tests/unit/decode_paged_plan_test.cpp). Kernels and launch: decode_paged.cu.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>

#include "cuda/kernels/decode_paged/decode_paged.h"
#include "cuda/kernels/decode_paged/decode_paged_shape.h"
#include "hone/error.h"

namespace hone::cuda {

namespace {

constexpr const char *kKernel = "decode.paged";

// The makespan model of decode_paged_default_chunk, in token-times of one CTA: a CTA costs
// its tokens plus kCtaOverheadTokens (the prologue's three dependent loads -- page table
// scan, page indices, first KV tile -- and, when split, writing and merging a partial state).
// A guess from the loaded latency (~1.5 us at ~20 GB/s per CTA), to be refitted on the H200
// sweep (docs/notes/decode_paged.md).
constexpr int64_t kCtaOverheadTokens = 64;
// Candidates stop at this many work items per CTA slot.
constexpr int64_t kMaxWavesOfCandidates = 8;
// CTA slots per SM the candidates count, at most: two CTAs of the default config keep 128 KB
// (head dim 128) in flight per SM, about twice its share of the read bandwidth times the loaded
// latency; a third would only split the work finer (more partial states, shorter chunks).
constexpr int kCandidateSlotsPerSm = 2;
// CTA slots per SM the default's makespan model counts. Fitted on the triage medians of three
// H200 tunes of Llama-3.1-8B (docs/notes/decode_paged.md, "The default's slots"): counting two,
// the default split a lone long request into one wave of two CTAs an SM, and its chunk was half
// the fastest candidate's at batch 1-8 (cost 1.014-1.016x the fastest over 50 buckets); counting
// one, 1.002-1.004x, 11-14 buckets more than 2 % faster, none slower.
constexpr int kModelSlotsPerSm = 1;

std::string str(int64_t v) { return std::to_string(v); }

int64_t slots_of(DecodePagedMachine m, int per_sm_at_most) {
  return std::max<int64_t>(1, static_cast<int64_t>(m.sms) *
                                  std::clamp(m.ctas_per_sm, 1, per_sm_at_most));
}

bool fail(std::string *reason, std::string text) {
  if (reason)
    *reason = std::move(text);
  return false;
}

int64_t pages_of(std::span<const int32_t> indptr, size_t b) {
  return static_cast<int64_t>(indptr[b + 1]) - indptr[b];
}

int64_t request_chunks(int64_t pages, int64_t chunk_pages) {
  return chunk_pages > 0 ? (pages + chunk_pages - 1) / chunk_pages : 1;
}

// Work items and the longest item [tokens, upper bound] when chunks are chunk_pages long.
struct Items {
  int64_t count = 0;
  int64_t longest_pages = 0;
};
Items items_of(std::span<const int32_t> indptr, int64_t chunk_pages) {
  Items it;
  for (size_t b = 0; b + 1 < indptr.size(); ++b) {
    const int64_t pages = pages_of(indptr, b);
    it.count += request_chunks(pages, chunk_pages);
    it.longest_pages = std::max(it.longest_pages, std::min(pages, chunk_pages));
  }
  return it;
}

// Estimated makespan [CTA token-times] of hkv x items CTAs on `slots` CTA slots: the smaller of
// two upper bounds of greedy scheduling -- waves of the longest item (tight for equal
// items), and total work over the slots plus the longest item (tight for ragged ones).
int64_t makespan(int64_t total_tokens, const Items &it, int64_t hkv, int page_size,
                 int64_t slots) {
  const int64_t ctas = hkv * it.count;
  const int64_t longest = it.longest_pages * page_size + kCtaOverheadTokens;
  if (ctas <= slots)
    return longest;
  const int64_t waves = (ctas + slots - 1) / slots;
  const int64_t work = hkv * total_tokens + kCtaOverheadTokens * ctas;
  return std::min(waves * longest, (work + slots - 1) / slots + longest);
}

} // namespace

Tactic DecodePagedConfig::to_tactic() const {
  Tactic t{kKernel, {{"kv_chunk", kv_chunk}, {"warps", warps}}};
  if (kv_heads != 1)
    t.params.emplace_back("kv_heads", kv_heads);
  if (fused_merge != 0)
    t.params.emplace_back("fused_merge", fused_merge);
  return t;
}

DecodePagedConfig DecodePagedConfig::from_tactic(const Tactic &tactic) {
  const auto not_a_config = [&] {
    HONE_INVALID_ARGUMENT("tactic '" + tactic.str() +
                          "' is not a decode.paged config "
                          "(decode.paged:kv_chunk=N,warps=W[,kv_heads=H][,fused_merge=1])");
  };
  const size_t n = tactic.params.size();
  if (tactic.kernel != kKernel || n < 2 || tactic.params[0].first != "kv_chunk" ||
      tactic.params[1].first != "warps")
    not_a_config();
  DecodePagedConfig c;
  size_t i = 2; // the optional fields, each at most once, in this order
  if (i < n && tactic.params[i].first == "kv_heads") {
    const int64_t h = tactic.params[i++].second;
    if (h != 2 && h != 4 && h != 8)
      HONE_INVALID_ARGUMENT("tactic '" + tactic.str() + "': kv_heads=" + str(h) +
                            " is not 2, 4 or 8 (1 is spelled by leaving the field out)");
    c.kv_heads = static_cast<int>(h);
  }
  if (i < n && tactic.params[i].first == "fused_merge") {
    if (tactic.params[i].second != 1)
      HONE_INVALID_ARGUMENT("tactic '" + tactic.str() + "': fused_merge=" +
                            str(tactic.params[i].second) +
                            " is not 1 (0 is spelled by leaving the field out)");
    c.fused_merge = 1;
    ++i;
  }
  if (i != n)
    not_a_config();
  const int64_t chunk = tactic.params[0].second, warps = tactic.params[1].second;
  if (chunk < 0 || chunk > std::numeric_limits<int32_t>::max())
    HONE_INVALID_ARGUMENT("tactic '" + tactic.str() + "': kv_chunk=" + str(chunk) +
                          " is negative or too large");
  if (warps != 2 && warps != 4 && warps != 8)
    HONE_INVALID_ARGUMENT("tactic '" + tactic.str() + "': warps=" + str(warps) +
                          " is not 2, 4 or 8");
  c.kv_chunk = static_cast<int>(chunk);
  c.warps = static_cast<int>(warps);
  if (c.kv_heads > c.warps)
    HONE_INVALID_ARGUMENT("tactic '" + tactic.str() + "': kv_heads=" + str(c.kv_heads) +
                          " exceeds warps=" + str(warps));
  return c;
}

void decode_paged_validate_heads(int64_t hq, int64_t hkv, int64_t head_dim, int64_t page_size) {
  if (hkv < 1)
    HONE_INVALID_ARGUMENT("decode.paged: hkv=" + str(hkv) + " is below 1");
  if (hq < 1)
    HONE_INVALID_ARGUMENT("decode.paged: hq=" + str(hq) + " is below 1");
  if (hq % hkv != 0)
    HONE_INVALID_ARGUMENT("decode.paged: hq=" + str(hq) + " is not a multiple of hkv=" +
                          str(hkv));
  if (hq / hkv > kDecodePagedMaxGroup)
    HONE_INVALID_ARGUMENT("decode.paged: hq/hkv=" + str(hq / hkv) + " (hq=" + str(hq) +
                          ", hkv=" + str(hkv) + ") exceeds the largest GQA ratio 8");
  if (head_dim != 64 && head_dim != 128 && head_dim != 256)
    HONE_INVALID_ARGUMENT("decode.paged: head_dim=" + str(head_dim) + " is not 64, 128 or 256");
  if (page_size != 16 && page_size != 32 && page_size != 64)
    HONE_INVALID_ARGUMENT("decode.paged: page_size=" + str(page_size) + " is not 16, 32 or 64");
}

void decode_paged_validate_table(std::span<const int32_t> kv_indptr,
                                 std::span<const int32_t> kv_last_page_len, int page_size) {
  if (kv_indptr.size() < 2)
    HONE_INVALID_ARGUMENT("decode.paged: batch=" + str(static_cast<int64_t>(kv_indptr.size()) - 1) +
                          " is below 1");
  const size_t batch = kv_indptr.size() - 1;
  if (kv_last_page_len.size() != batch)
    HONE_INVALID_ARGUMENT("decode.paged: kv_last_page_len has " + str(kv_last_page_len.size()) +
                          " entries for batch=" + str(batch));
  if (kv_indptr[0] < 0)
    HONE_INVALID_ARGUMENT("decode.paged: kv_indptr[0]=" + str(kv_indptr[0]) + " is negative");
  int64_t tokens = 0;
  for (size_t b = 0; b < batch; ++b) {
    const int32_t lo = kv_indptr[b], hi = kv_indptr[b + 1];
    if (hi < lo)
      HONE_INVALID_ARGUMENT("decode.paged: kv_indptr is not monotone: kv_indptr[" + str(b) +
                            "]=" + str(lo) + " > kv_indptr[" + str(b + 1) + "]=" + str(hi));
    if (hi == lo)
      HONE_INVALID_ARGUMENT("decode.paged: request " + str(b) + " has length 0 (kv_indptr[" +
                            str(b) + "] == kv_indptr[" + str(b + 1) + "] == " + str(lo) + ")");
    const int32_t last = kv_last_page_len[b];
    if (last < 1 || last > page_size)
      HONE_INVALID_ARGUMENT("decode.paged: kv_last_page_len[" + str(b) + "]=" + str(last) +
                            " is outside 1..page_size=" + str(page_size));
    tokens += static_cast<int64_t>(hi - lo - 1) * page_size + last;
  }
  if (tokens > std::numeric_limits<int32_t>::max())
    HONE_INVALID_ARGUMENT("decode.paged: " + str(tokens) + " tokens in all exceed 2^31 - 1");
}

DecodePagedSplit decode_paged_split(std::span<const int32_t> kv_indptr, int page_size,
                                    int kv_chunk) {
  const int64_t chunk_pages = kv_chunk > 0 ? kv_chunk / page_size : 0;
  DecodePagedSplit s;
  for (size_t b = 0; b + 1 < kv_indptr.size(); ++b) {
    const int64_t n = request_chunks(pages_of(kv_indptr, b), chunk_pages);
    s.chunks += n;
    s.max_chunks = std::max(s.max_chunks, static_cast<int>(n));
  }
  return s;
}

size_t decode_paged_workspace_bytes(const DecodePagedSplit &split, int hq, int head_dim) {
  if (split.max_chunks <= 1)
    return 0;
  const size_t states = static_cast<size_t>(split.chunks) * static_cast<size_t>(hq);
  return decode_paged_partial_o_offset(split, hq) + states * head_dim * sizeof(float);
}

int decode_paged_min_chunk(int page_size, int warps) {
  return std::max(page_size, kDecodePagedTileTokens * warps);
}

int decode_paged_default_warps(int head_dim) { return head_dim >= 256 ? 2 : 4; }

int decode_paged_default_chunk(std::span<const int32_t> kv_indptr, int page_size, int hkv,
                               int warps, DecodePagedMachine machine) {
  const int64_t slots = slots_of(machine, kModelSlotsPerSm);
  int64_t max_pages = 0, total_pages = 0;
  for (size_t b = 0; b + 1 < kv_indptr.size(); ++b) {
    max_pages = std::max(max_pages, pages_of(kv_indptr, b));
    total_pages += pages_of(kv_indptr, b);
  }
  // Token counts at page granularity: the model does not need the partial last pages.
  const int64_t total_tokens = total_pages * page_size;
  const int64_t min_pages = decode_paged_min_chunk(page_size, warps) / page_size;
  if (max_pages <= min_pages)
    return 0;

  // Candidates: powers of two from min_pages, and the smallest chunk that keeps every CTA in
  // one wave (the finest split without a tail), found by bisection (items fall as chunks grow).
  int64_t best_pages = max_pages; // no split
  int64_t best = makespan(total_tokens, items_of(kv_indptr, max_pages), hkv, page_size, slots);
  const auto consider = [&](int64_t pages) {
    if (pages < min_pages || pages >= max_pages)
      return;
    const int64_t t = makespan(total_tokens, items_of(kv_indptr, pages), hkv, page_size, slots);
    // Ties go to the longer chunk: fewer partial states to write and merge.
    if (t < best || (t == best && pages > best_pages)) {
      best = t;
      best_pages = pages;
    }
  };
  for (int64_t pages = min_pages; pages < max_pages; pages *= 2)
    consider(pages);
  if (hkv * items_of(kv_indptr, max_pages).count <= slots) {
    int64_t lo = min_pages, hi = max_pages; // hi fits one wave
    while (lo < hi) {
      const int64_t mid = lo + (hi - lo) / 2;
      if (hkv * items_of(kv_indptr, mid).count <= slots)
        hi = mid;
      else
        lo = mid + 1;
    }
    consider(lo);
  }
  return best_pages >= max_pages ? 0 : static_cast<int>(best_pages * page_size);
}

std::vector<int> decode_paged_candidate_chunks(std::span<const int32_t> kv_indptr, int page_size,
                                               int hkv, int warps, DecodePagedMachine machine) {
  const int64_t slots = slots_of(machine, kCandidateSlotsPerSm);
  int64_t max_pages = 0;
  for (size_t b = 0; b + 1 < kv_indptr.size(); ++b)
    max_pages = std::max(max_pages, pages_of(kv_indptr, b));
  std::vector<int> out{0};
  for (int64_t pages = decode_paged_min_chunk(page_size, warps) / page_size; pages < max_pages;
       pages *= 2)
    if (hkv * items_of(kv_indptr, pages).count <= kMaxWavesOfCandidates * slots)
      out.push_back(static_cast<int>(pages * page_size));
  return out;
}

size_t decode_paged_shared_bytes(int warps, int head_dim) {
  return static_cast<size_t>(warps) * static_cast<size_t>(decode_paged_warp_ring_bytes(head_dim));
}

bool decode_paged_can_implement(const DecodePagedConfig &config, int head_dim, int page_size,
                                std::string *reason) {
  if (config.warps != 2 && config.warps != 4 && config.warps != 8)
    return fail(reason, "warps=" + str(config.warps) + " is not 2, 4 or 8");
  if (config.fused_merge != 0 && config.fused_merge != 1)
    return fail(reason, "fused_merge=" + str(config.fused_merge) + " is not 0 or 1");
  if (config.kv_heads != 1 && config.kv_heads != 2 && config.kv_heads != 4 &&
      config.kv_heads != 8)
    return fail(reason, "kv_heads=" + str(config.kv_heads) + " is not 1, 2, 4 or 8");
  if (config.kv_heads > config.warps)
    return fail(reason, "kv_heads=" + str(config.kv_heads) + " exceeds warps=" +
                            str(config.warps) + " (a warp serves one KV head)");
  if (head_dim != 64 && head_dim != 128 && head_dim != 256)
    return fail(reason, "head_dim=" + str(head_dim) + " is not 64, 128 or 256");
  if (page_size != 16 && page_size != 32 && page_size != 64)
    return fail(reason, "page_size=" + str(page_size) + " is not 16, 32 or 64");
  if (config.kv_chunk < 0 || config.kv_chunk % page_size != 0)
    return fail(reason, "kv_chunk=" + str(config.kv_chunk) +
                            " is not a non-negative multiple of page_size=" + str(page_size));
  const size_t smem = decode_paged_shared_bytes(config.warps, head_dim);
  if (smem > kDecodePagedMaxSharedBytes)
    return fail(reason, "warps=" + str(config.warps) + " at head_dim=" + str(head_dim) +
                            " needs " + str(static_cast<int64_t>(smem)) +
                            " bytes of shared memory, over " +
                            str(static_cast<int64_t>(kDecodePagedMaxSharedBytes)));
  return true;
}

bool decode_paged_can_implement(const DecodePagedConfig &config, int hkv, int head_dim,
                                int page_size, std::string *reason) {
  if (!decode_paged_can_implement(config, head_dim, page_size, reason))
    return false;
  if (hkv < 1 || hkv % config.kv_heads != 0)
    return fail(reason, "kv_heads=" + str(config.kv_heads) + " does not divide hkv=" + str(hkv));
  return true;
}

} // namespace hone::cuda
