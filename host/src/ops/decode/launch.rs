//! decode: the variants, the paged cache and its checks, the launch geometry and the safe
//! wrapper.

use rooflab_kernels::decode::{
    HEAD_DIMS, MAX_GROUP, shared_f32, v01_block_per_head, v02_gqa_grouped, v03_split_k,
    v04_vectorized_pipeline as v04, v05_mma_heads as v05, v06_keys_as_rows as v06,
    v07_fused_combine as v07, v08_stream_k as v08, v09_bulk_copy as v09,
    v10_tma_pages as v10, v11_one_round_combine as v11,
};
use rooflab_kernels::tensor_map::TensorMap;

use crate::bench::KernelUse;
use crate::error::{Error, Result};
use crate::gpu::{DeviceArray, Gpu, Kernel, KernelId, LaunchConfig, ViewMut};
use crate::tensor::{Buf, Dtype, expect_buf};
use crate::timeline::BlockStamps;

/// The decode ladder.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    V01BlockPerHead,
    V02GqaGrouped,
    V03SplitK,
    V04VectorizedPipeline,
    V05MmaHeads,
    V06KeysAsRows,
    V07FusedCombine,
    V08StreamK,
    V09BulkCopy,
    V10TmaPages,
    V11OneRoundCombine,
}

pub const LADDER: [Variant; 11] = [
    Variant::V01BlockPerHead,
    Variant::V02GqaGrouped,
    Variant::V03SplitK,
    Variant::V04VectorizedPipeline,
    Variant::V05MmaHeads,
    Variant::V06KeysAsRows,
    Variant::V07FusedCombine,
    Variant::V08StreamK,
    Variant::V09BulkCopy,
    Variant::V10TmaPages,
    Variant::V11OneRoundCombine,
];

/// The sizes of one decode step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DecodeShape {
    pub batch: usize,
    /// Query heads and KV heads (GQA: `hq` a multiple of `hkv`).
    pub hq: usize,
    pub hkv: usize,
    pub dim: usize,
    /// Keys a page holds, pages in the cache, and block-table entries per sequence.
    pub page_size: usize,
    pub num_pages: usize,
    pub max_pages: usize,
}

impl DecodeShape {
    /// Elements of one cache (K or V).
    pub fn cache_elements(&self) -> usize {
        self.num_pages * self.page_size * self.hkv * self.dim
    }
    /// Elements of q (and out).
    pub fn q_elements(&self) -> usize {
        self.batch * self.hq * self.dim
    }
    pub fn scale(&self) -> f32 {
        1.0 / (self.dim as f32).sqrt()
    }
}

/// Parameters shared by every entry: q, the caches, the block table, the context lengths,
/// out, Hq, Hkv, page size, max pages, scale.
pub type DecodeKernel = Kernel<(
    *const u16,
    *const u16,
    *const u16,
    *const u32,
    *const u32,
    *mut u16,
    u32,
    u32,
    u32,
    u32,
    f32,
)>;

/// v03's partial-row kernels: the decode parameters with the workspace and the split length
/// in place of `out`.
pub type PartialKernel = Kernel<(
    *const u16,
    *const u16,
    *const u16,
    *const u32,
    *const u32,
    *mut f32,
    *mut f32,
    u32,
    u32,
    u32,
    u32,
    f32,
    u32,
)>;

/// v04's and v05's kernels: v03's partial-kernel parameters with `out` before the
/// workspace (one kernel writes either: `out` with one split, the workspace with more).
pub type PipelineKernel = Kernel<(
    *const u16,
    *const u16,
    *const u16,
    *const u32,
    *const u32,
    *mut u16,
    *mut f32,
    *mut f32,
    u32,
    u32,
    u32,
    u32,
    f32,
    u32,
)>;

/// v07's kernels: the pipeline parameters plus the counters of its last-block combine.
pub type FusedKernel = Kernel<(
    *const u16,
    *const u16,
    *const u16,
    *const u32,
    *const u32,
    *mut u16,
    *mut f32,
    *mut f32,
    u32,
    u32,
    u32,
    u32,
    f32,
    u32,
    *mut u32,
)>;

/// v08-v10's kernels: decode's parameters with the workspace, then the plan, its pair count,
/// the counters and the caches' tensor maps (v10's; null for v08 and v09).
pub type StreamKernel = Kernel<(
    *const u16,
    *const u16,
    *const u16,
    *const u32,
    *const u32,
    *mut u16,
    *mut f32,
    *mut f32,
    u32,
    u32,
    u32,
    u32,
    f32,
    *const u32,
    u32,
    *mut u32,
    *const TensorMap,
    *const TensorMap,
    *mut u64,
)>;

/// v08's plan of a step (`v08_stream_k`'s header): the (sequence, KV head, chunk) pairs'
/// tiles laid end to end and packed into at most one wave of blocks of equal cost ([`pack`]),
/// so at most `tiles_per_block` tiles each.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StreamPlan {
    pub pairs: u32,
    pub tiles: u32,
    pub tiles_per_block: u32,
    pub blocks: u32,
    /// Partial groups (`v08::HEADS` workspace rows each) of the pairs cut across blocks.
    pub groups: u32,
    /// The plan buffer the kernel reads (`v08::plan_len(pairs, blocks)` u32).
    pub buffer: Vec<u32>,
}

/// Tiles a segment may hold in a block of cost at most `c` whose cost so far is `fill`:
/// whole rounds of the warps, after the segment's own cost (`pack`'s unit).
fn segment_room(c: u32, fill: u32) -> u32 {
    c.saturating_sub(fill.saturating_add(v08::SEGMENT_COST_TILES)) / v08::WARPS * v08::WARPS
}

/// Each block's first tile for pairs starting at `starts[p]` (`starts[p + 1]` the next),
/// packed into blocks of a cost of at most `c`, in tiles: a piece of a pair (a segment)
/// costs its tiles rounded up to whole rounds of the block's warps (`v08::WARPS` tiles: warp
/// w takes the segment's tiles w, w + WARPS, ..) plus `v08::SEGMENT_COST_TILES` (the ring's
/// fill and drain and the merge across warps, which every segment pays). A pair fills what
/// is left of the open block when that holds at least `MIN_TILES_PER_BLOCK` tiles (or the
/// whole pair), then blocks of its own; cut pieces are whole rounds. So a pair of at most
/// `MIN_TILES_PER_BLOCK` tiles is never cut: it fits where it starts. Needs
/// `c ≥ MIN_TILES_PER_BLOCK + SEGMENT_COST_TILES`.
fn pack(starts: &[u32], c: u32) -> Vec<u32> {
    let (min, w, seg) = (v08::MIN_TILES_PER_BLOCK, v08::WARPS, v08::SEGMENT_COST_TILES);
    let cost = |tiles: u32| seg + tiles.div_ceil(w) * w;
    let mut blocks = Vec::new();
    // Cost of the open block (0: none open; a full one takes nothing more either way).
    let mut fill = 0u32;
    for p in starts.windows(2) {
        let (mut pos, mut rem) = (p[0], p[1] - p[0]);
        let fits = cost(rem) <= c - fill;
        if fill > 0 && (fits || segment_room(c, fill) >= min) {
            let take = if fits { rem } else { segment_room(c, fill) };
            (pos, rem, fill) = (pos + take, rem - take, fill + cost(take));
        }
        while rem > 0 {
            let take = rem.min(segment_room(c, 0));
            blocks.push(pos);
            (pos, rem, fill) = (pos + take, rem - take, cost(take));
        }
    }
    blocks
}

impl StreamPlan {
    /// The plan for contexts `lens` on a GPU of `sms` SMs: pair `p = (b·Hkv + kvh)·chunks +
    /// chunk` has `⌈lens[b] / TILE⌉` tiles; the smallest block cost (room for at least
    /// `MIN_TILES_PER_BLOCK` tiles in one segment) whose packing needs no more blocks than the
    /// GPU holds at once.
    pub fn new(s: &DecodeShape, lens: &[u32], sms: u32) -> Result<StreamPlan> {
        let op = v08::decode_v08_stream_k_d128.name();
        let too_large = |what: &str, value: u64| Error::TooLarge {
            op: op.into(),
            what: what.into(),
            value,
            limit: u32::MAX as u64 / 8,
        };
        let group = (s.hq / s.hkv.max(1)) as u32;
        let chunks = group.div_ceil(v08::HEADS).max(1) as u64;
        let pairs = lens.len() as u64 * s.hkv as u64 * chunks;
        // Every plan entry and the kernel's tile arithmetic are u32.
        if pairs > u32::MAX as u64 / 8 {
            return Err(too_large("pairs (sequence, KV head, chunk)", pairs));
        }
        let mut starts = Vec::with_capacity(pairs as usize + 1);
        let mut t = 0u64;
        for &len in lens {
            for _ in 0..s.hkv as u64 * chunks {
                starts.push(t as u32);
                t += (len as u64).div_ceil(v08::TILE as u64);
                if t > u32::MAX as u64 / 8 {
                    return Err(too_large("tiles of 16 keys × KV heads × chunks", t));
                }
            }
        }
        starts.push(t as u32);
        let total = t as u32;
        let slots = (sms * v08::resident_blocks(s.dim as u32)).max(1);
        // The packing needs fewer blocks as they grow: all of it in one at the cost of every
        // pair as one segment (at most u32::MAX / 8 tiles and pairs, so within u32).
        let floor = v08::MIN_TILES_PER_BLOCK + v08::SEGMENT_COST_TILES;
        let one_block = (total as u64 + pairs * (v08::SEGMENT_COST_TILES + v08::WARPS) as u64).min(u32::MAX as u64) as u32;
        let (mut lo, mut hi) = (total.div_ceil(slots).max(floor), one_block.max(floor));
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if pack(&starts, mid).len() as u32 <= slots {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        let c = lo;
        let mut block_start = pack(&starts, c);
        let tiles_per_block = segment_room(c, 0);
        let blocks = block_start.len() as u32;
        block_start.push(total);
        let np = pairs as usize;
        // Each pair's blocks: the one holding its first tile to the one holding its last.
        let block_of = |tile: u32| block_start.partition_point(|&b| b <= tile) as u32 - 1;
        let mut offs = Vec::with_capacity(np);
        let mut firsts = Vec::with_capacity(np);
        let mut counts = Vec::with_capacity(np);
        let mut groups = 0u32;
        for p in 0..np {
            let (first, last) = (block_of(starts[p]), block_of(starts[p + 1] - 1));
            let n = last - first + 1;
            offs.push(groups);
            firsts.push(first);
            counts.push(n);
            if n > 1 {
                groups += n;
            }
        }
        // Each block's first pair: the one holding its first tile.
        let first_pair: Vec<u32> = block_start[..blocks as usize]
            .iter()
            .map(|&t0| starts.partition_point(|&s| s <= t0) as u32 - 1)
            .collect();
        let mut buffer = starts;
        for part in [offs, firsts, counts, block_start, first_pair] {
            buffer.extend(part);
        }
        debug_assert_eq!(buffer.len(), v08::plan_len(pairs as u32, blocks));
        Ok(StreamPlan {
            pairs: pairs as u32,
            tiles: total,
            tiles_per_block,
            blocks,
            groups,
            buffer,
        })
    }

    /// Pair `p`'s (first block, blocks), as the kernel reads them from the plan.
    pub fn pair_blocks(&self, p: usize) -> (u32, u32) {
        let at = |i: usize| self.buffer[i + p];
        (at(v08::pair_first_block_at(self.pairs)), at(v08::pair_blocks_at(self.pairs)))
    }

    /// Block `g`'s (first tile, end tile, first pair).
    pub fn block(&self, g: usize) -> (u32, u32, u32) {
        let bs = v08::block_start_at(self.pairs) + g;
        let fp = v08::block_first_pair_at(self.pairs, self.blocks) + g;
        (self.buffer[bs], self.buffer[bs + 1], self.buffer[fp])
    }
}

/// How v04-v07 launch at a shape: heads a block (`gc`), blocks a KV head
/// (`chunks`), keys a split and splits (v05 and v06 keep v04's split rule, `v04::split_len`,
/// with the blocks an SM each holds).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PipelinePlan {
    pub gc: u32,
    /// Dynamic shared memory of a block.
    pub shared_bytes: u32,
    pub chunks: u32,
    pub split_len: u32,
    pub splits: u32,
}

impl PipelinePlan {
    pub fn new(var: Variant, s: &DecodeShape, lens: &[u32], sms: u32) -> PipelinePlan {
        let group = (s.hq / s.hkv.max(1)) as u32;
        let (gc, smem) = var.pipeline_block(s.dim, group);
        let resident = if matches!(var, Variant::V06KeysAsRows | Variant::V07FusedCombine) {
            v06::resident_blocks(s.dim as u32)
        } else {
            v04::resident_blocks(smem)
        };
        let chunks = group.div_ceil(gc).max(1);
        let total: u64 = lens.iter().map(|&l| l as u64).sum();
        let max_len = lens.iter().copied().max().unwrap_or(0);
        let slots = sms * resident;
        let split_len = v04::split_len(total, max_len, s.hkv as u32 * chunks, slots);
        PipelinePlan {
            gc,
            shared_bytes: smem,
            chunks,
            split_len,
            splits: max_len.div_ceil(split_len).max(1),
        }
    }
}

impl Variant {
    /// Whether the step runs v04's pipeline (one kernel per shape, [`PipelinePlan`]).
    pub fn pipelined(self) -> bool {
        matches!(
            self,
            Variant::V04VectorizedPipeline
                | Variant::V05MmaHeads
                | Variant::V06KeysAsRows
                | Variant::V07FusedCombine
        )
    }

    /// A pipelined step's heads a block and dynamic shared memory at head dim `dim` for a
    /// GQA group of `group` (v04: the group's chunk of up to 8, built per chunk; v05: 16;
    /// v06-v08: 8).
    pub fn pipeline_block(self, dim: usize, group: u32) -> (u32, u32) {
        if self == Variant::V05MmaHeads {
            (v05::HEADS, v05::shared_bytes(dim as u32))
        } else if matches!(
            self,
            Variant::V06KeysAsRows | Variant::V07FusedCombine | Variant::V08StreamK
        ) {
            (v06::HEADS, v06::shared_bytes(dim as u32))
        } else if self == Variant::V09BulkCopy {
            (v09::HEADS, v09::shared_bytes(dim as u32))
        } else if self == Variant::V10TmaPages {
            (v10::HEADS, v10::shared_bytes(dim as u32))
        } else if self == Variant::V11OneRoundCombine {
            (v11::HEADS, v11::shared_bytes(dim as u32))
        } else {
            let gc = v04::group_chunk(group);
            (gc, v04::shared_bytes(dim as u32, gc))
        }
    }

    /// A pipelined step's kernel for head dim `dim` and (v04) `gc` heads a block.
    pub fn pipeline_kernel(self, dim: usize, gc: u32) -> PipelineKernel {
        match (self, dim) {
            (Variant::V05MmaHeads, 128) => return v05::decode_v05_mma_heads_d128,
            (Variant::V05MmaHeads, _) => return v05::decode_v05_mma_heads_d64,
            (Variant::V06KeysAsRows, 128) => return v06::decode_v06_keys_as_rows_d128,
            (Variant::V06KeysAsRows, _) => return v06::decode_v06_keys_as_rows_d64,
            _ => {}
        }
        match (dim, gc) {
            (128, 1) => v04::decode_v04_vectorized_pipeline_d128_g1,
            (128, 2) => v04::decode_v04_vectorized_pipeline_d128_g2,
            (128, 4) => v04::decode_v04_vectorized_pipeline_d128_g4,
            (128, _) => v04::decode_v04_vectorized_pipeline_d128_g8,
            (_, 1) => v04::decode_v04_vectorized_pipeline_d64_g1,
            (_, 2) => v04::decode_v04_vectorized_pipeline_d64_g2,
            (_, 4) => v04::decode_v04_vectorized_pipeline_d64_g4,
            (_, _) => v04::decode_v04_vectorized_pipeline_d64_g8,
        }
    }

    /// v07's kernel for head dim `dim`.
    pub fn fused_kernel(dim: usize) -> FusedKernel {
        if dim == 128 {
            v07::decode_v07_fused_combine_d128
        } else {
            v07::decode_v07_fused_combine_d64
        }
    }

    /// Whether the step launches v08's plan (v08-v11).
    pub fn streamed(self) -> bool {
        matches!(
            self,
            Variant::V08StreamK
                | Variant::V09BulkCopy
                | Variant::V10TmaPages
                | Variant::V11OneRoundCombine
        )
    }

    /// Whether the step's tiles are TMA boxes of a page's slots (v10, v11: page sizes a
    /// multiple of 16 only).
    pub fn tma_pages(self) -> bool {
        matches!(self, Variant::V10TmaPages | Variant::V11OneRoundCombine)
    }


    /// v08's, v09's, v10's or v11's kernel for head dim `dim` (v08's for any other step).
    pub fn stream_kernel(self, dim: usize) -> StreamKernel {
        match (self, dim) {
            (Variant::V09BulkCopy, 128) => v09::decode_v09_bulk_copy_d128,
            (Variant::V09BulkCopy, _) => v09::decode_v09_bulk_copy_d64,
            (Variant::V10TmaPages, 128) => v10::decode_v10_tma_pages_d128,
            (Variant::V10TmaPages, _) => v10::decode_v10_tma_pages_d64,
            (Variant::V11OneRoundCombine, 128) => v11::decode_v11_one_round_combine_d128,
            (Variant::V11OneRoundCombine, _) => v11::decode_v11_one_round_combine_d64,
            (_, 128) => v08::decode_v08_stream_k_d128,
            (_, _) => v08::decode_v08_stream_k_d64,
        }
    }

    /// The one-launch kernel of v01 and v02 (v03 runs v02's when it does not split).
    pub fn kernel(self, dim: usize) -> DecodeKernel {
        match (self, dim) {
            (Variant::V01BlockPerHead, 128) => v01_block_per_head::decode_v01_block_per_head_d128,
            (Variant::V01BlockPerHead, _) => v01_block_per_head::decode_v01_block_per_head_d64,
            (_, 128) => v02_gqa_grouped::decode_v02_gqa_grouped_d128,
            (_, _) => v02_gqa_grouped::decode_v02_gqa_grouped_d64,
        }
    }

    /// v03's partial-row kernel.
    pub fn partial_kernel(dim: usize) -> PartialKernel {
        if dim == 128 {
            v03_split_k::decode_v03_split_k_d128
        } else {
            v03_split_k::decode_v03_split_k_d64
        }
    }

    /// The kernel that names the step (its file's stem, its row).
    fn main_kernel(self, dim: usize) -> KernelId {
        match self {
            Variant::V03SplitK => Self::partial_kernel(dim).id(),
            Variant::V07FusedCombine => Self::fused_kernel(dim).id(),
            Variant::V08StreamK
            | Variant::V09BulkCopy
            | Variant::V10TmaPages
            | Variant::V11OneRoundCombine => self.stream_kernel(dim).id(),
            Variant::V04VectorizedPipeline | Variant::V05MmaHeads | Variant::V06KeysAsRows => {
                self.pipeline_kernel(dim, 4).id()
            }
            _ => self.kernel(dim).id(),
        }
    }

    /// The variant file's stem, e.g. `v02_gqa_grouped`.
    pub fn stem(self) -> &'static str {
        self.main_kernel(64).stem()
    }

    /// The bench row's variant: the stem and the head dim.
    pub fn row_variant(self, dim: usize) -> String {
        format!("{}_d{dim}", self.stem())
    }

    /// Query heads (warps) one block serves.
    pub fn warps(self, s: &DecodeShape) -> usize {
        match self {
            Variant::V01BlockPerHead => 1,
            Variant::V02GqaGrouped | Variant::V03SplitK => s.hq / s.hkv.max(1),
            Variant::V04VectorizedPipeline
            | Variant::V05MmaHeads
            | Variant::V06KeysAsRows
            | Variant::V07FusedCombine
            | Variant::V08StreamK
            | Variant::V09BulkCopy
            | Variant::V10TmaPages
            | Variant::V11OneRoundCombine => v04::WARPS as usize,
        }
    }

    /// The kernels a launch may run, with their block and shared memory (v03: the partial
    /// rows and the combine; it runs v02's kernel instead when it does not split).
    pub fn kernel_uses(self, s: &DecodeShape) -> Vec<KernelUse> {
        if self.streamed() {
            let (_, smem) = self.pipeline_block(s.dim, (s.hq / s.hkv.max(1)) as u32);
            return vec![KernelUse::new(self.stream_kernel(s.dim), v08::THREADS, smem)];
        }
        if self == Variant::V07FusedCombine {
            let (_, smem) = self.pipeline_block(s.dim, (s.hq / s.hkv.max(1)) as u32);
            return vec![KernelUse::new(Self::fused_kernel(s.dim), v07::THREADS, smem)];
        }
        if self.pipelined() {
            let (gc, smem) = self.pipeline_block(s.dim, (s.hq / s.hkv.max(1)) as u32);
            return vec![
                KernelUse::new(self.pipeline_kernel(s.dim, gc), v04::THREADS, smem),
                KernelUse::new(
                    v03_split_k::decode_v03_split_k_combine,
                    32 * v03_split_k::COMBINE_ROWS,
                    0,
                ),
            ];
        }
        let w = self.warps(s) as u32;
        let smem = 4 * shared_f32(w, s.dim as u32);
        let mut u = vec![KernelUse::new(self.main_kernel(s.dim), 32 * w, smem)];
        if self == Variant::V03SplitK {
            u.push(KernelUse::new(
                v03_split_k::decode_v03_split_k_combine,
                32 * v03_split_k::COMBINE_ROWS,
                0,
            ));
        }
        u
    }

    pub fn kernels(self, dim: usize) -> Vec<KernelId> {
        let mut k = vec![self.main_kernel(dim)];
        if self == Variant::V03SplitK || (self.pipelined() && self != Variant::V07FusedCombine) {
            k.push(v03_split_k::decode_v03_split_k_combine.id());
        }
        k
    }

    /// Splits of each context a launch uses (v03's choice from the batch, the longest
    /// context and the SM count; 1 for the others).
    pub fn splits(self, s: &DecodeShape, max_len: u32, sms: u32) -> u32 {
        match self {
            Variant::V03SplitK => {
                v03_split_k::splits(s.batch as u32, s.hkv as u32, max_len, sms)
            }
            _ => 1,
        }
    }
}

/// A paged KV cache with its block table and context lengths, checked once.
pub struct PagedKv {
    pub shape: DecodeShape,
    pub k_cache: Buf,
    pub v_cache: Buf,
    pub table: DeviceArray<u32>,
    pub lens: DeviceArray<u32>,
    /// The host copies the checks (and the reference and the cost) read.
    pub table_host: Vec<u32>,
    pub lens_host: Vec<u32>,
    /// v08's plan and its device copy, made at v08's first launch (for the SM count of the
    /// GPU it ran on) and reused by later ones: the step's metadata does not change.
    stream_plan: std::cell::OnceCell<(u32, StreamPlan, DeviceArray<u32>)>,
}

impl PagedKv {
    /// Checks the shape, the caches, every block-table entry a context uses and every
    /// context length, then uploads the table and the lengths. Nothing past a sequence's
    /// last used page is read, so those entries may hold anything.
    pub fn new(
        gpu: &Gpu,
        shape: DecodeShape,
        k_cache: Buf,
        v_cache: Buf,
        table: &[u32],
        lens: &[u32],
    ) -> Result<PagedKv> {
        let op = "decode";
        let bad = |what: String| Error::Shape { op: op.into(), what };
        let s = shape;
        if !HEAD_DIMS.contains(&(s.dim as u32)) {
            return Err(bad(format!(
                "head dim {} is not supported: the kernels are built for D in {HEAD_DIMS:?}",
                s.dim
            )));
        }
        if s.hkv == 0 || s.hq == 0 || !s.hq.is_multiple_of(s.hkv) {
            return Err(bad(format!(
                "Hq = {} is not a multiple of Hkv = {} (grouped-query attention shares each \
                 KV head among Hq/Hkv query heads)",
                s.hq, s.hkv
            )));
        }
        if s.page_size == 0 {
            return Err(bad("page size 0".into()));
        }
        if s.batch > 65535 {
            return Err(Error::TooLarge {
                op: op.into(),
                what: "batch (blocks in y)".into(),
                value: s.batch as u64,
                limit: 65535,
            });
        }
        // The kernels index pages and slots in 64 bits, table rows and heads in 32.
        for (what, v) in [
            ("max_pages·page_size", s.max_pages as u64 * s.page_size as u64),
            ("batch·Hq·D", s.q_elements() as u64),
            ("batch·max_pages", s.batch as u64 * s.max_pages as u64),
            ("num_pages", s.num_pages as u64),
            (
                "num_pages·page_size·Hkv (cache rows)",
                s.num_pages as u64 * s.page_size as u64 * s.hkv as u64,
            ),
        ] {
            if v > u32::MAX as u64 {
                return Err(Error::TooLarge {
                    op: op.into(),
                    what: what.into(),
                    value: v,
                    limit: u32::MAX as u64,
                });
            }
        }
        expect_buf(op, "K cache", &k_cache, Dtype::Bf16, s.cache_elements())?;
        expect_buf(op, "V cache", &v_cache, Dtype::Bf16, s.cache_elements())?;
        if table.len() != s.batch * s.max_pages {
            return Err(bad(format!(
                "the block table has {} entries, expected batch {} × max_pages {}",
                table.len(),
                s.batch,
                s.max_pages
            )));
        }
        if lens.len() != s.batch {
            return Err(bad(format!(
                "{} context lengths for a batch of {}",
                lens.len(),
                s.batch
            )));
        }
        let capacity = s.max_pages * s.page_size;
        for (b, &len) in lens.iter().enumerate() {
            if len == 0 {
                return Err(bad(format!(
                    "context length 0 for sequence {b}: there is nothing to attend to (drop \
                     the sequence from the batch)"
                )));
            }
            if len as usize > capacity {
                return Err(bad(format!(
                    "context length {len} for sequence {b} is past the table's capacity, \
                     max_pages {} × page size {} = {capacity}",
                    s.max_pages, s.page_size
                )));
            }
            let used = (len as usize).div_ceil(s.page_size);
            let row = &table[b * s.max_pages..b * s.max_pages + used];
            if let Some((p, &page)) = row.iter().enumerate().find(|&(_, &p)| p as usize >= s.num_pages) {
                return Err(bad(format!(
                    "block table entry [{b}][{p}] = {page} is past the cache's {} pages",
                    s.num_pages
                )));
            }
        }
        Ok(PagedKv {
            shape,
            k_cache,
            v_cache,
            table: gpu.upload(table)?,
            lens: gpu.upload(lens)?,
            table_host: table.to_vec(),
            lens_host: lens.to_vec(),
            stream_plan: std::cell::OnceCell::new(),
        })
    }

    /// v08's plan for these lengths on `gpu`, planned and uploaded on first use.
    pub fn stream_plan(&self, gpu: &Gpu) -> Result<(&StreamPlan, &DeviceArray<u32>)> {
        let sms = gpu.info.multiprocessors;
        if self.stream_plan.get().is_none() {
            let plan = StreamPlan::new(&self.shape, &self.lens_host, sms)?;
            let dev = gpu.upload(&plan.buffer)?;
            let _ = self.stream_plan.set((sms, plan, dev));
        }
        let (planned_for, plan, dev) = self.stream_plan.get().expect("set above");
        if *planned_for != sms {
            return Err(Error::Other(format!(
                "this PagedKv's v08 plan was made for a GPU of {planned_for} SMs, not {sms}: \
                 make one PagedKv per GPU"
            )));
        }
        Ok((plan, dev))
    }
}

/// q and out are bf16 of `B·Hq·D` elements (what every step reads and writes).
fn expect_q_out(op: &str, s: &DecodeShape, q: &Buf, out: &Buf) -> Result<()> {
    expect_buf(op, "q", q, Dtype::Bf16, s.q_elements())?;
    expect_buf(op, "out", out, Dtype::Bf16, s.q_elements())
}

/// One decode step with the given variant: `out[b][h] = softmax(q·Kᵀ/√D)·V` over sequence
/// b's context.
pub fn decode(gpu: &Gpu, var: Variant, q: &Buf, kv: &PagedKv, out: &mut Buf) -> Result<()> {
    let s = kv.shape;
    let kernel = var.kernel(s.dim);
    let op = var.main_kernel(s.dim).name();
    expect_q_out(op, &s, q, out)?;
    if var.pipelined() {
        return decode_pipelined(gpu, var, q, kv, out);
    }
    if var.streamed() {
        return decode_stream_k(gpu, var, q, kv, out, None);
    }
    let warps = var.warps(&s);
    if warps as u32 > MAX_GROUP {
        return Err(Error::Shape {
            op: op.into(),
            what: format!(
                "a GQA group of {warps} query heads (Hq {} / Hkv {}) is past the {MAX_GROUP} \
                 warps a block of this step serves; use v01",
                s.hq, s.hkv
            ),
        });
    }
    if s.batch == 0 {
        return Ok(());
    }
    let mut cfg = LaunchConfig {
        grid: ((s.hq / warps) as u32, s.batch as u32, 1),
        block: (32 * warps as u32, 1, 1),
        shared_bytes: 4 * shared_f32(warps as u32, s.dim as u32),
    };
    let max_len = kv.lens_host.iter().copied().max().unwrap_or(0);
    let splits = var.splits(&s, max_len, gpu.info.multiprocessors);
    if splits > 1 {
        cfg.grid.2 = splits;
        let split_len = v03_split_k::split_len(max_len, splits);
        return split_then_combine(gpu, &s, splits, op, out, |wo, wml| {
            // SAFETY: as below for the partial kernel (grid (Hq/W, B, splits)), whose rows
            // (B·Hq·splits of D f32, then as many (m, l) pairs) fill the workspace.
            unsafe {
                gpu.launch(
                    Variant::partial_kernel(s.dim),
                    cfg,
                    (
                        q.view::<u16>(op)?,
                        kv.k_cache.view::<u16>(op)?,
                        kv.v_cache.view::<u16>(op)?,
                        kv.table.view(),
                        kv.lens.view(),
                        wo,
                        wml,
                        s.hq as u32,
                        s.hkv as u32,
                        s.page_size as u32,
                        s.max_pages as u32,
                        s.scale(),
                        split_len,
                    ),
                )
            }
        });
    }
    // SAFETY: q, out hold B·Hq·D bf16, the caches num_pages·page_size·Hkv·D (checked);
    // the table entries a context uses are < num_pages and each length is in 1..=capacity
    // (checked by PagedKv::new); the grid is (Hq / W, B) of W warps, W dividing the group,
    // with the shared memory the body needs.
    unsafe {
        gpu.launch(
            kernel,
            cfg,
            (
                q.view::<u16>(op)?,
                kv.k_cache.view::<u16>(op)?,
                kv.v_cache.view::<u16>(op)?,
                kv.table.view(),
                kv.lens.view(),
                out.view_mut::<u16>(op)?,
                s.hq as u32,
                s.hkv as u32,
                s.page_size as u32,
                s.max_pages as u32,
                s.scale(),
            ),
        )
    }
}

/// v04-v06: one launch straight into `out` when the plan has one split, else the
/// partial rows into the workspace and v03's combine.
fn decode_pipelined(gpu: &Gpu, var: Variant, q: &Buf, kv: &PagedKv, out: &mut Buf) -> Result<()> {
    let s = kv.shape;
    if s.batch == 0 {
        return Ok(());
    }
    let plan = PipelinePlan::new(var, &s, &kv.lens_host, gpu.info.multiprocessors);
    if var == Variant::V07FusedCombine {
        return decode_fused(gpu, q, kv, out, plan);
    }
    let kernel = var.pipeline_kernel(s.dim, plan.gc);
    let op = kernel.name();
    if plan.splits > u16::MAX as u32 {
        return Err(Error::TooLarge {
            op: op.into(),
            what: "splits (blocks in z)".into(),
            value: plan.splits as u64,
            limit: u16::MAX as u64,
        });
    }
    let cfg = LaunchConfig {
        grid: (s.hkv as u32 * plan.chunks, s.batch as u32, plan.splits),
        block: (v04::THREADS, 1, 1),
        shared_bytes: plan.shared_bytes,
    };
    // The kernel's parameters around its outputs: `out` (one split) or the workspace.
    let run = |o: Option<ViewMut<'_, u16>>, wo: Option<ViewMut<'_, f32>>, wml: Option<ViewMut<'_, f32>>| {
        // SAFETY: q, out hold B·Hq·D bf16, the caches num_pages·page_size·Hkv·D (checked);
        // table entries a context uses are < num_pages, lengths in 1..=capacity and cache
        // rows fit in u32 (PagedKv::new); grid, block and shared memory as the kernel's
        // header says; with one split (`o`) the plan covers the longest context, with more
        // the workspace (`wo`, `wml`) holds B·Hq·splits rows of D f32 and as many (m, l)
        // pairs, which the kernel writes for every split, empty ones included.
        unsafe {
            gpu.launch(
                kernel,
                cfg,
                (
                    q.view::<u16>(op)?,
                    kv.k_cache.view::<u16>(op)?,
                    kv.v_cache.view::<u16>(op)?,
                    kv.table.view(),
                    kv.lens.view(),
                    o,
                    wo,
                    wml,
                    s.hq as u32,
                    s.hkv as u32,
                    s.page_size as u32,
                    s.max_pages as u32,
                    s.scale(),
                    plan.split_len,
                ),
            )
        }
    };
    if plan.splits == 1 {
        return run(Some(out.view_mut::<u16>(op)?), None, None);
    }
    split_then_combine(gpu, &s, plan.splits, op, out, |wo, wml| run(None, Some(wo), Some(wml)))
}

/// v07: one launch with v06's plan; with several splits the workspace takes the partial
/// rows and the last block of each (sequence, KV head, chunk) merges them into `out`,
/// ticketing through `B·gridDim.x` of the GPU's counters (which it leaves at 0).
fn decode_fused(gpu: &Gpu, q: &Buf, kv: &PagedKv, out: &mut Buf, plan: PipelinePlan) -> Result<()> {
    let s = kv.shape;
    let kernel = Variant::fused_kernel(s.dim);
    let op = kernel.name();
    if plan.splits > u16::MAX as u32 {
        return Err(Error::TooLarge {
            op: op.into(),
            what: "splits (blocks in z)".into(),
            value: plan.splits as u64,
            limit: u16::MAX as u64,
        });
    }
    let grid_x = s.hkv as u32 * plan.chunks;
    let cfg = LaunchConfig {
        grid: (grid_x, s.batch as u32, plan.splits),
        block: (v07::THREADS, 1, 1),
        shared_bytes: plan.shared_bytes,
    };
    let rows = s.batch * s.hq;
    let splits = plan.splits as usize;
    // One split: no partial rows, no counters (the kernel writes `out`).
    let (o_len, len) = if splits > 1 {
        (rows * splits * s.dim, rows * splits * (s.dim + 2))
    } else {
        (0, 0)
    };
    let n_counters = if splits > 1 { s.batch * grid_x as usize } else { 0 };
    gpu.with_workspace(len, |ws| {
        gpu.with_counters(n_counters, |counters| {
            let (wo, wml) = ws.view_range_mut(0..len).split_at(o_len);
            // SAFETY: as v04-v06's launch (q, out, the caches and the table checked by
            // PagedKv::new; v06's grid, block and shared memory); with several splits the
            // workspace holds B·Hq·splits rows of D f32 and as many (m, l) pairs, and the
            // counters B·gridDim.x u32 at 0, which the kernel leaves at 0.
            unsafe {
                gpu.launch(
                    kernel,
                    cfg,
                    (
                        q.view::<u16>(op)?,
                        kv.k_cache.view::<u16>(op)?,
                        kv.v_cache.view::<u16>(op)?,
                        kv.table.view(),
                        kv.lens.view(),
                        out.view_mut::<u16>(op)?,
                        wo,
                        wml,
                        s.hq as u32,
                        s.hkv as u32,
                        s.page_size as u32,
                        s.max_pages as u32,
                        s.scale(),
                        plan.split_len,
                        counters.view_range_mut(0..n_counters),
                    ),
                )
            }
        })
    })
}

/// One decode step of v08-v11 as [`decode`] runs it, with every block's
/// [`BlockStamps`] (in block order; `v08_stream_k::STAMP_*`): where the launch's time goes,
/// block by block (`rooflab-bench --timeline`).
pub fn decode_timeline(
    gpu: &Gpu,
    var: Variant,
    q: &Buf,
    kv: &PagedKv,
    out: &mut Buf,
) -> Result<Vec<BlockStamps>> {
    let s = kv.shape;
    let op = var.main_kernel(s.dim).name();
    if !var.streamed() {
        return Err(Error::Other(format!(
            "{op}: only the stream-K steps (v08-v11) record a timeline; it needs one wave of \
             planned blocks"
        )));
    }
    expect_q_out(op, &s, q, out)?;
    if s.batch == 0 {
        return Ok(vec![]);
    }
    let blocks = kv.stream_plan(gpu)?.0.blocks as usize;
    let mut stamps = gpu.alloc::<u64>(blocks * v08::STAMP_WORDS)?;
    gpu.zero(stamps.view_mut())?;
    decode_stream_k(gpu, var, q, kv, out, Some(stamps.view_mut()))?;
    gpu.sync()?;
    let words = stamps.to_host()?;
    Ok(words
        .chunks_exact(v08::STAMP_WORDS)
        .map(|w| BlockStamps {
            start_ns: w[v08::STAMP_START],
            first_data_ns: w[v08::STAMP_FIRST_DATA],
            tiles_done_ns: w[v08::STAMP_TILES_DONE],
            end_ns: w[v08::STAMP_END],
            sm: w[v08::STAMP_SM] as u32,
        })
        .collect())
}

/// v08-v11: one launch of the step's plan (made on first use); the pairs cut across
/// blocks leave their partial rows in the workspace and the last block of each merges them,
/// ticketing through `pairs` of the GPU's counters (which it leaves at 0). `stamps`
/// (`--timeline`) holds `STAMP_WORDS` u64 for each of the plan's blocks.
fn decode_stream_k(
    gpu: &Gpu,
    var: Variant,
    q: &Buf,
    kv: &PagedKv,
    out: &mut Buf,
    stamps: Option<ViewMut<'_, u64>>,
) -> Result<()> {
    let s = kv.shape;
    let tma = var.tma_pages();
    let kernel = var.stream_kernel(s.dim);
    let op = kernel.name();
    // v09-v11 are in the sm_90a PTX only: said before anything is planned or launched.
    gpu.available(kernel)?;
    if tma && !s.page_size.is_multiple_of(v10::PAGE_MULTIPLE as usize) {
        return Err(Error::Shape {
            op: op.into(),
            what: format!(
                "page size {} is not a multiple of {}: {} copies a tile of {} keys as one \
                 TMA box of one page's slots; use v09 or v08, which take any page size",
                s.page_size,
                v10::PAGE_MULTIPLE,
                var.stem(),
                v10::TILE
            ),
        });
    }
    // v10: the caches as (D, Hkv, page slots) tensors, boxes of 64 dims × 1 head × 16 slots.
    let maps = if tma {
        let map = |name: &str, c: &Buf| -> Result<_> {
            let t = crate::tma::Bf16Tiles::new(op, name, &c.view::<u16>(op)?, s.hkv, s.dim, 1, v10::BOX_COLS)?
                .in_planes(op, s.num_pages * s.page_size)?
                .with_box_planes(op, v10::TILE)?;
            gpu.tensor_map(t)
        };
        (Some(map("K cache", &kv.k_cache)?), Some(map("V cache", &kv.v_cache)?))
    } else {
        (None, None)
    };
    if s.batch == 0 {
        return Ok(());
    }
    let (plan, plan_dev) = kv.stream_plan(gpu)?;
    let (_, smem) = var.pipeline_block(s.dim, (s.hq / s.hkv.max(1)) as u32);
    let cfg = LaunchConfig {
        grid: (plan.blocks, 1, 1),
        block: (v08::THREADS, 1, 1),
        shared_bytes: smem,
    };
    let rows = plan.groups as usize * v08::HEADS as usize;
    let (o_len, len) = (rows * s.dim, rows * (s.dim + 2));
    let n_counters = plan.pairs as usize;
    if let Some(st) = &stamps {
        assert!(st.len() >= plan.blocks as usize * v08::STAMP_WORDS, "room for every block's stamps");
    }
    gpu.with_workspace(len, |ws| {
        gpu.with_counters(n_counters, |counters| {
            let (wo, wml) = ws.view_range_mut(0..len).split_at(o_len);
            // SAFETY: q, out, the caches and the table checked by PagedKv::new; the plan is
            // StreamPlan::new's for these lengths (pairs, tiles, partial groups, each
            // block's first pair; v09 holds as many blocks an SM as v08, asserted in its
            // file), the grid its blocks with the step's block and shared memory;
            // the workspace holds its groups' rows (HEADS rows of D f32 each, then as many
            // (m, l) pairs), the counters `pairs` u32 at 0, which the kernel leaves at 0.
            // With v10, the maps describe the caches checked above (Bf16Tiles::new checked
            // their alignment and row stride); v08 and v09 never read theirs (null). The
            // stamps, when given, hold every block's (asserted above).
            unsafe {
                gpu.launch(
                    kernel,
                    cfg,
                    (
                        q.view::<u16>(op)?,
                        kv.k_cache.view::<u16>(op)?,
                        kv.v_cache.view::<u16>(op)?,
                        kv.table.view(),
                        kv.lens.view(),
                        out.view_mut::<u16>(op)?,
                        wo,
                        wml,
                        s.hq as u32,
                        s.hkv as u32,
                        s.page_size as u32,
                        s.max_pages as u32,
                        s.scale(),
                        plan_dev.view(),
                        plan.pairs,
                        counters.view_range_mut(0..n_counters),
                        maps.0,
                        maps.1,
                        stamps,
                    ),
                )
            }
        })
    })
}

/// The split path of v03-v06: `partial` writes the B·Hq·splits partial rows (D f32
/// each, unnormalized) and as many (m, l) pairs into the GPU's workspace, then v03's combine
/// merges each (sequence, query head)'s rows into `out`, one warp a row.
fn split_then_combine(
    gpu: &Gpu,
    s: &DecodeShape,
    splits: u32,
    op: &str,
    out: &mut Buf,
    partial: impl FnOnce(ViewMut<'_, f32>, ViewMut<'_, f32>) -> Result<()>,
) -> Result<()> {
    let rows = s.batch * s.hq;
    let (o_len, len) = (
        rows * splits as usize * s.dim,
        rows * splits as usize * (s.dim + 2),
    );
    let ccfg = LaunchConfig::for_threads(
        op,
        rows.div_ceil(v03_split_k::COMBINE_ROWS as usize) as u64 * 32 * v03_split_k::COMBINE_ROWS as u64,
        32 * v03_split_k::COMBINE_ROWS,
    )?;
    gpu.with_workspace(len, |ws| {
        let (wo, wml) = ws.view_range_mut(0..len).split_at(o_len);
        partial(wo, wml)?;
        // SAFETY: the combine reads the rows `partial` wrote (B·Hq·splits of D f32, then as
        // many (m, l) pairs), one warp per (sequence, query head), and writes out (B·Hq·D
        // bf16, checked by the callers).
        unsafe {
            gpu.launch(
                v03_split_k::decode_v03_split_k_combine,
                ccfg,
                (
                    ws.view_range(0..o_len),
                    ws.view_range(o_len..len),
                    out.view_mut::<u16>(op)?,
                    rows as u32,
                    splits,
                    s.dim as u32,
                ),
            )
        }
    })
}

#[cfg(test)]
mod unit_tests {
    use super::*;

    #[test]
    fn names_and_geometry() {
        assert_eq!(Variant::V01BlockPerHead.stem(), "v01_block_per_head");
        assert_eq!(Variant::V02GqaGrouped.row_variant(128), "v02_gqa_grouped_d128");
        let s = DecodeShape {
            batch: 64,
            hq: 32,
            hkv: 8,
            dim: 128,
            page_size: 16,
            num_pages: 1,
            max_pages: 1,
        };
        assert_eq!(Variant::V02GqaGrouped.warps(&s), 4);
        for v in LADDER {
            let u = v.kernel_uses(&s);
            // v07 and v08 combine in their own last blocks: one kernel.
            let splits = v == Variant::V03SplitK || (v.pipelined() && v != Variant::V07FusedCombine);
            assert_eq!(u.len(), 1 + splits as usize);
            if !v.pipelined() && !v.streamed() {
                assert!(u[0].shared_bytes <= 48 * 1024);
            }
        }
        assert_eq!(Variant::V03SplitK.stem(), "v03_split_k");
        // Batch 1, L 32768 on an H200: 8 blocks → 33 splits of whole 32-key tiles.
        let one = DecodeShape { batch: 1, ..s };
        assert_eq!(Variant::V03SplitK.splits(&one, 32768, 132), 33);
        assert_eq!(v03_split_k::split_len(32768, 33) % 32, 0);
        assert!(v03_split_k::split_len(32768, 33) * 33 >= 32768);
        assert_eq!(Variant::V03SplitK.splits(&s, 4096, 132), 1, "batch 64: 512 blocks");
        assert_eq!(Variant::V03SplitK.splits(&one, 100, 132), 1, "too short to split");
        // v04's plans on an H200 (one block an SM at D 128): batch 1 × L 32768 → 32 splits
        // of 1024 keys (8 × 32 blocks, two a slot);
        // a single short context → one split; batch 256 × L 32768 → no split.
        let p = PipelinePlan::new(Variant::V04VectorizedPipeline, &one, &[32768], 132);
        assert_eq!((p.gc, p.chunks, p.split_len, p.splits), (4, 1, 1024, 32));
        let p = PipelinePlan::new(Variant::V04VectorizedPipeline, &one, &[1], 132);
        assert_eq!((p.split_len, p.splits), (32, 1));
        let many = DecodeShape { batch: 256, ..s };
        let lens: Vec<u32> = (0..256).map(|i| if i == 0 { 32768 } else { 16384 }).collect();
        assert_eq!(PipelinePlan::new(Variant::V04VectorizedPipeline, &many, &lens, 132).splits, 1);
        // Every split covers whole tiles, and the splits the longest context.
        for lens in [vec![4097, 5, 1], vec![300; 64], vec![1_000_000]] {
            let s = DecodeShape { batch: lens.len(), ..s };
            let p = PipelinePlan::new(Variant::V04VectorizedPipeline, &s, &lens, 132);
            let max = *lens.iter().max().unwrap();
            assert_eq!(p.split_len % v04::TILE, 0);
            assert!(p.split_len as u64 * p.splits as u64 >= max as u64);
            assert!(p.splits <= v04::MAX_SPLITS);
        }
        // Groups: 6 → chunks of 8 (one), 32 → four, 3 → one of 4.
        for (hq, hkv, gc, chunks) in [(12, 2, 8, 1), (32, 1, 8, 4), (3, 1, 4, 1), (8, 8, 1, 1)] {
            let p = PipelinePlan::new(Variant::V04VectorizedPipeline, &DecodeShape { hq, hkv, ..s }, &[100], 132);
            assert_eq!((p.gc, p.chunks), (gc, chunks), "Hq {hq} Hkv {hkv}");
        }
        assert!(v04::shared_bytes(128, 8) <= 227 * 1024);
        // v05: every group up to 16 in one chunk, 32 in two; one block an SM at D 128 (as
        // v04), so the same splits.
        for (hq, hkv, chunks) in [(12, 2, 1), (32, 1, 2), (16, 1, 1), (8, 8, 1)] {
            let p = PipelinePlan::new(Variant::V05MmaHeads, &DecodeShape { hq, hkv, ..s }, &[100], 132);
            assert_eq!((p.gc, p.chunks), (16, chunks), "Hq {hq} Hkv {hkv}");
        }
        let p = PipelinePlan::new(Variant::V05MmaHeads, &one, &[32768], 132);
        assert_eq!((p.split_len, p.splits), (1024, 32));
        assert_eq!(v04::resident_blocks(v05::shared_bytes(128)), 1);
        assert_eq!(v04::resident_blocks(v05::shared_bytes(64)), 2);
        assert_eq!(v04::resident_blocks(v04::shared_bytes(128, 4)), 1);
        assert_eq!(Variant::V05MmaHeads.stem(), "v05_mma_heads");
        // v05's copies: lane l's rows l/2, l/2 + 16 at chunks 2c + l%2 land where attention
        // v03's swizzle puts them (the layout its ldmatrix reads), and cover each buffer once.
        use rooflab_kernels::attention::v03_flash_mma::swizzled_byte_offset;
        for d in [64u32, 128] {
            let mut seen = std::collections::HashSet::new();
            for lane in 0..32 {
                for j in 0..2 {
                    for c in 0..d / 16 {
                        let row = lane / 2 + 16 * j;
                        let at = row * d * 2 + v05::chunk_offset(lane, c % 4) + 128 * (c / 4);
                        assert_eq!(at, swizzled_byte_offset(d, row, 2 * c + lane % 2));
                        assert!(seen.insert(at), "D {d}: offset {at} twice");
                    }
                }
            }
            assert_eq!(seen.len() as u32, v05::TILE * d / 8);
        }
        // v06: chunks of 8 heads; two blocks an SM at D 128 (96 KiB of rings, 128
        // registers), three at D 64, so twice v05's splits at batch 1 × L 32768.
        for (hq, hkv, chunks) in [(12, 2, 1), (32, 1, 4), (3, 1, 1), (32, 8, 1)] {
            let p = PipelinePlan::new(Variant::V06KeysAsRows, &DecodeShape { hq, hkv, ..s }, &[100], 132);
            assert_eq!((p.gc, p.chunks), (8, chunks), "Hq {hq} Hkv {hkv}");
        }
        assert_eq!(v06::shared_bytes(128), 96 * 1024);
        assert_eq!((v06::resident_blocks(128), v06::resident_blocks(64)), (2, 3));
        let p = PipelinePlan::new(Variant::V06KeysAsRows, &one, &[32768], 132);
        assert_eq!((p.split_len, p.splits), (512, 64));
        assert_eq!(Variant::V06KeysAsRows.stem(), "v06_keys_as_rows");
        assert_eq!(Variant::V07FusedCombine.stem(), "v07_fused_combine");
        assert_eq!(
            PipelinePlan::new(Variant::V07FusedCombine, &one, &[32768], 132),
            PipelinePlan::new(Variant::V06KeysAsRows, &one, &[32768], 132)
        );
        assert_eq!(Variant::V07FusedCombine.kernels(128).len(), 1);
        assert_eq!(v04::split_len(1, 1, 1, 1) % v06::TILE, 0);
        // v08's plans: every tile of every pair in exactly one block, blocks of at most
        // `tiles_per_block` tiles, at most one wave (two blocks an SM at D 128), each block's
        // first pair the one holding its first tile, no pair of at most MIN_TILES_PER_BLOCK
        // tiles cut, partial groups only for pairs cut across blocks, without overlap.
        for (dim, hq, hkv, lens) in [
            (128, 32, 8, vec![32768]),
            (128, 32, 8, (0..64).map(|i| 1 + (i * 977) % 4096).collect::<Vec<u32>>()),
            (128, 32, 8, (0..256).map(|i| 1 + (i * 977) % 512).collect::<Vec<u32>>()),
            (64, 4, 2, vec![1, 15, 16, 17, 31, 32, 33]),
            (128, 32, 1, vec![5, 100_000, 1]),
            (64, 12, 2, vec![1; 1000]),
        ] {
            let sh = DecodeShape { batch: lens.len(), hq, hkv, dim, ..s };
            let p = StreamPlan::new(&sh, &lens, 132).unwrap();
            let chunks = (hq / hkv).div_ceil(v08::HEADS as usize);
            assert_eq!(p.pairs as usize, lens.len() * hkv * chunks);
            let tiles: u64 = lens.iter().map(|&l| l.div_ceil(v08::TILE) as u64).sum::<u64>()
                * (hkv * chunks) as u64;
            assert_eq!(p.tiles as u64, tiles);
            assert_eq!(p.buffer.len(), v08::plan_len(p.pairs, p.blocks));
            assert!(p.blocks <= 132 * v08::resident_blocks(dim as u32), "{} blocks", p.blocks);
            assert!(p.tiles_per_block >= v08::MIN_TILES_PER_BLOCK);
            let mut end = 0;
            for g in 0..p.blocks as usize {
                let (t0, t1, first) = p.block(g);
                assert_eq!(t0, end, "block {g} starts where the last ended");
                assert!(t0 < t1 && t1 - t0 <= p.tiles_per_block, "block {g}: {t0}..{t1}");
                let f = first as usize;
                assert!(p.buffer[f] <= t0 && t0 < p.buffer[f + 1], "block {g}");
                end = t1;
            }
            assert_eq!(end, p.tiles);
            let mut groups = std::collections::HashSet::new();
            for q in 0..p.pairs as usize {
                let (first, n) = p.pair_blocks(q);
                let (ps, pe) = (p.buffer[q], p.buffer[q + 1]);
                assert!(first + n <= p.blocks);
                assert!(p.block(first as usize).0 <= ps && pe <= p.block((first + n - 1) as usize).1);
                if pe - ps <= v08::MIN_TILES_PER_BLOCK {
                    assert_eq!(n, 1, "pair {q} of {} tiles cut", pe - ps);
                }
                if n > 1 {
                    let off = p.buffer[v08::part_off_at(p.pairs) + q];
                    for i in 0..n {
                        assert!(groups.insert(off + i), "group {} twice", off + i);
                        assert!(off + i < p.groups);
                    }
                }
            }
            assert_eq!(groups.len() as u32, p.groups);
        }
        // Batch 1 × L 32768 at D 128 on 132 SMs: 16384 tiles in one wave of at most 264
        // blocks, 32 partial rows a head (each pair in 32 blocks of 64 tiles).
        let p = StreamPlan::new(&one, &[32768], 132).unwrap();
        assert_eq!((p.tiles, p.tiles_per_block), (16384, 64));
        assert!(p.blocks <= 264);
        assert!((0..8).all(|q| p.pair_blocks(q).1 == 32));
        assert_eq!(Variant::V08StreamK.stem(), "v08_stream_k");
        assert_eq!(Variant::V08StreamK.kernels(128).len(), 1);
        assert_eq!(Variant::V09BulkCopy.stem(), "v09_bulk_copy");
        assert_eq!(Variant::V10TmaPages.stem(), "v10_tma_pages");
        assert_eq!(crate::ptx::first_arch_with(Variant::V10TmaPages.kernels(64)[0].name()), Some("sm_90a"));
        assert_eq!(Variant::V11OneRoundCombine.stem(), "v11_one_round_combine");
        assert_eq!(Variant::V11OneRoundCombine.row_variant(128), "v11_one_round_combine_d128");
        assert_eq!(
            crate::ptx::first_arch_with(Variant::V11OneRoundCombine.kernels(128)[0].name()),
            Some("sm_90a")
        );
        assert!(Variant::V11OneRoundCombine.streamed() && Variant::V11OneRoundCombine.tma_pages());
        // v11's merge: every live head a power of two of the block's warps, all inside it.
        let per: [u32; v11::HEADS as usize] = std::array::from_fn(|i| v11::warps_per_head(i as u32 + 1));
        assert_eq!(per, [8, 4, 2, 2, 1, 1, 1, 1]);
        assert!((1..=v11::HEADS).all(|live| live * v11::warps_per_head(live) <= v11::WARPS));
        // v09 only in the sm_90a PTX; v08 from sm_80.
        assert_eq!(crate::ptx::first_arch_with(Variant::V09BulkCopy.kernels(128)[0].name()), Some("sm_90a"));
        assert_eq!(crate::ptx::first_arch_with(Variant::V08StreamK.kernels(64)[0].name()), Some("sm_80"));
        let g16 = DecodeShape { hq: 16, hkv: 1, ..s };
        assert!(4 * shared_f32(Variant::V02GqaGrouped.warps(&g16) as u32, 128) <= 48 * 1024);
    }
}
