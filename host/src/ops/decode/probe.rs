//! decode: the copy-only probe (`kernels-gpu/src/decode/probe_read.rs`): the K and V bytes
//! of a step read in decode's pattern (head rows), whole rows (page rows) and whole rows of
//! pages that follow each other (linear), so the bench shows what the pattern itself allows
//! beside the ladder's rows at the same shape.

use rooflab_kernels::decode::probe_read::{self as pr, decode_probe_read};

use super::launch::{DecodeShape, PagedKv};
use crate::error::{Error, Result};
use crate::gpu::{DeviceArray, Gpu, KernelUse, LaunchConfig};
use crate::tensor::Buf;

/// How the probe walks the rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Probe {
    /// One KV head's slice of each row a block (decode's pattern).
    HeadRows,
    /// Whole rows (every KV head) a block: a page is contiguous.
    PageRows,
    /// Whole rows through a table whose pages follow each other: a contiguous stream.
    Linear,
}

pub const PROBES: [Probe; 3] = [Probe::HeadRows, Probe::PageRows, Probe::Linear];

impl Probe {
    pub fn name(self) -> &'static str {
        match self {
            Probe::HeadRows => "head_rows",
            Probe::PageRows => "page_rows",
            Probe::Linear => "linear",
        }
    }
    /// The bench row's variant: the kernel's stem, the walk, the head dim.
    pub fn row_variant(self, dim: usize) -> String {
        format!("{}_{}_d{dim}", decode_probe_read.stem(), self.name())
    }
    pub fn kernel_use() -> KernelUse {
        KernelUse::new(decode_probe_read, pr::THREADS, pr::SHARED_BYTES)
    }
}

/// The launch of a probe over `s` with contexts of at most `max_len` keys: the shifts the
/// kernel takes and its grid.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProbeLaunch {
    pub page_shift: u32,
    pub row_vec_shift: u32,
    pub row_stride_vectors: u32,
    pub units: u32,
    pub rows_per_block: u32,
    pub grid: (u32, u32, u32),
}

impl ProbeLaunch {
    pub fn blocks(&self) -> usize {
        self.grid.0 as usize * self.grid.1 as usize
    }
}

/// The probe's plan, or why it cannot walk this shape (its index arithmetic is shifts: the
/// page size and the head row's 16-byte vectors must be powers of two).
pub fn plan(probe: Probe, s: &DecodeShape, max_len: u32) -> Result<ProbeLaunch> {
    let bad = |what: String| Error::Shape { op: "decode probe".into(), what };
    let head_vectors = (s.dim * 2 / 16) as u32;
    if !s.page_size.is_power_of_two() || !head_vectors.is_power_of_two() || !s.hkv.is_power_of_two() {
        return Err(bad(format!(
            "the probe takes page sizes, head dims and KV head counts that are powers of two \
             (got page {}, D {}, Hkv {}); the ladder's steps take any",
            s.page_size, s.dim, s.hkv
        )));
    }
    let (row_vectors, units) = match probe {
        Probe::HeadRows => (head_vectors, s.hkv as u32),
        Probe::PageRows | Probe::Linear => (head_vectors * s.hkv as u32, 1),
    };
    let rows_per_block = (pr::BLOCK_BYTES / (16 * row_vectors)).max(1);
    let splits = max_len.div_ceil(rows_per_block).max(1);
    let y = s.batch as u64 * units as u64;
    if y > 65535 {
        return Err(bad(format!("{y} (sequence, unit) pairs: more than a grid's 65535 rows")));
    }
    Ok(ProbeLaunch {
        page_shift: s.page_size.trailing_zeros(),
        row_vec_shift: row_vectors.trailing_zeros(),
        row_stride_vectors: head_vectors * s.hkv as u32,
        units,
        rows_per_block,
        grid: (splits, y as u32, 1),
    })
}

/// The block table the linear probe reads through: each sequence's pages follow the
/// previous sequence's, in order (modulo the cache's pages when the contexts need more).
pub fn linear_table(s: &DecodeShape, lens: &[u32]) -> Vec<u32> {
    let mut table = vec![0u32; s.batch * s.max_pages];
    let mut next = 0usize;
    for (b, &l) in lens.iter().enumerate() {
        for p in 0..(l as usize).div_ceil(s.page_size) {
            table[b * s.max_pages + p] = (next % s.num_pages) as u32;
            next += 1;
        }
    }
    table
}

/// One probe launch over `kv`'s caches through `table` (`kv`'s own or [`linear_table`]'s,
/// uploaded), one u32 a block into `out` (at least [`ProbeLaunch::blocks`]).
pub fn launch(gpu: &Gpu, kv: &PagedKv, l: &ProbeLaunch, table: &DeviceArray<u32>, out: &mut DeviceArray<u32>) -> Result<()> {
    let op = "decode probe";
    let s = kv.shape;
    if table.len() < s.batch * s.max_pages || out.len() < l.blocks() {
        return Err(Error::Shape {
            op: op.into(),
            what: format!(
                "table of {} (need {}), out of {} (need {})",
                table.len(),
                s.batch * s.max_pages,
                out.len(),
                l.blocks()
            ),
        });
    }
    let cfg = LaunchConfig {
        grid: l.grid,
        block: (pr::THREADS, 1, 1),
        shared_bytes: pr::SHARED_BYTES,
    };
    // SAFETY: the caches hold num_pages·page_size·Hkv·D bf16 and every entry of `table`
    // below a context's pages is < num_pages (PagedKv::new checked kv's own table;
    // linear_table's entries are taken modulo num_pages); the lengths are in 1..=capacity;
    // `out` holds one u32 a block (above); shifts, units and grid from `plan`.
    unsafe {
        gpu.launch(
            decode_probe_read,
            cfg,
            (
                kv.k_cache.view::<u16>(op)?,
                kv.v_cache.view::<u16>(op)?,
                table.view(),
                kv.lens.view(),
                out.view_mut(),
                s.max_pages as u32,
                l.page_shift,
                l.row_vec_shift,
                l.row_stride_vectors,
                l.units,
                l.rows_per_block,
            ),
        )
    }
}

/// The wrapping sum of the u32 words of the K and V rows below each context length, read
/// through `table`, from the caches' bits: what the blocks' sums must add up to.
pub fn expected_sum(s: &DecodeShape, k: &[u16], v: &[u16], table: &[u32], lens: &[u32]) -> u32 {
    let row = s.hkv * s.dim;
    let mut acc = 0u32;
    for (b, &l) in lens.iter().enumerate() {
        for r in 0..l as usize {
            let page = table[b * s.max_pages + r / s.page_size] as usize;
            let at = (page * s.page_size + r % s.page_size) * row;
            for c in [k, v] {
                for w in c[at..at + row].chunks_exact(2) {
                    acc = acc.wrapping_add(w[0] as u32 | (w[1] as u32) << 16);
                }
            }
        }
    }
    acc
}

/// The caches' bits, downloaded.
pub fn cache_bits(kv: &PagedKv) -> Result<(Vec<u16>, Vec<u16>)> {
    let bits = |b: &Buf| match b {
        Buf::Bf16(a) => a.to_host(),
        Buf::F32(_) => Err(Error::Other("decode probe: the caches are bf16".into())),
    };
    Ok((bits(&kv.k_cache)?, bits(&kv.v_cache)?))
}

/// Prepared probe: its plan, its table on the device and the blocks' sums.
pub struct ProbeRun {
    pub probe: Probe,
    pub launch: ProbeLaunch,
    pub table_host: Vec<u32>,
    pub table: DeviceArray<u32>,
    pub out: DeviceArray<u32>,
}

impl ProbeRun {
    pub fn new(gpu: &Gpu, probe: Probe, kv: &PagedKv) -> Result<ProbeRun> {
        let max_len = kv.lens_host.iter().copied().max().unwrap_or(1);
        let launch = plan(probe, &kv.shape, max_len)?;
        let table_host = match probe {
            Probe::Linear => linear_table(&kv.shape, &kv.lens_host),
            Probe::HeadRows | Probe::PageRows => kv.table_host.clone(),
        };
        Ok(ProbeRun {
            probe,
            launch,
            table: gpu.upload(&table_host)?,
            table_host,
            out: gpu.alloc(launch.blocks())?,
        })
    }
    pub fn run(&mut self, gpu: &Gpu, kv: &PagedKv) -> Result<()> {
        launch(gpu, kv, &self.launch, &self.table, &mut self.out)
    }
    /// One launch into poisoned sums, then their total against the caches' bits.
    pub fn check(&mut self, gpu: &Gpu, kv: &PagedKv) -> Result<()> {
        gpu.poison(self.out.view_mut())?;
        self.run(gpu, kv)?;
        gpu.sync()?;
        let got = self.out.to_host()?.into_iter().fold(0u32, u32::wrapping_add);
        let (k, v) = cache_bits(kv)?;
        let want = expected_sum(&kv.shape, &k, &v, &self.table_host, &kv.lens_host);
        if got != want {
            return Err(Error::Mismatch(format!(
                "decode probe {}: the blocks' sums add up to {got:#010x}, the caches' rows to {want:#010x} \
                 (lens {:?})",
                self.probe.name(),
                &kv.lens_host[..kv.lens_host.len().min(8)]
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod unit_tests {
    use super::*;

    fn shape(batch: usize, page_size: usize, dim: usize) -> DecodeShape {
        DecodeShape { batch, hq: 32, hkv: 8, dim, page_size, num_pages: 10, max_pages: 4 }
    }

    #[test]
    fn plans_read_32_kib_of_a_cache_a_block() {
        let s = shape(3, 16, 128);
        let h = plan(Probe::HeadRows, &s, 1000).unwrap();
        // 256-byte head rows: 128 rows a block, Hkv units a sequence.
        assert_eq!((h.row_vec_shift, h.units, h.rows_per_block), (4, 8, 128));
        assert_eq!(h.grid, (8, 24, 1));
        assert_eq!(h.row_stride_vectors, 128);
        let p = plan(Probe::PageRows, &s, 1000).unwrap();
        // 2-KiB rows: one page of 16 rows a block.
        assert_eq!((p.row_vec_shift, p.units, p.rows_per_block, p.page_shift), (7, 1, 16, 4));
        assert_eq!(p.grid, (63, 3, 1));
        assert!(plan(Probe::HeadRows, &shape(1, 7, 128), 10).unwrap_err().to_string().contains("powers of two"));
    }

    #[test]
    fn linear_table_follows_on() {
        let s = shape(3, 16, 64);
        let t = linear_table(&s, &[17, 1, 64]);
        assert_eq!(&t[0..2], &[0, 1]);
        assert_eq!(t[4], 2);
        assert_eq!(&t[8..12], &[3, 4, 5, 6]);
        // Past the cache's pages it wraps.
        let t = linear_table(&s, &[64, 64, 64]);
        assert_eq!(t[8 + 1], 9);
        assert_eq!(t[8 + 2], 0);
    }

    #[test]
    fn expected_sum_by_hand() {
        let s = DecodeShape { batch: 1, hq: 1, hkv: 1, dim: 2, page_size: 1, num_pages: 2, max_pages: 2 };
        // Rows of one u32 each: page 1 then page 0.
        let (k, v) = ([1u16, 2, 3, 4], [5u16, 0, 0, 1]);
        let want = (3 | 4 << 16) + (1 | 2 << 16) + 5 + (1 << 16);
        assert_eq!(expected_sum(&s, &k, &v, &[1, 0], &[2]), want);
        assert_eq!(expected_sum(&s, &k, &v, &[1, 0], &[1]), (3 | 4 << 16) + (1 << 16));
    }
}
