//! The host half of the cluster-row layout (softmax v07 and v08, norm v06 and v07; device half and
//! geometry in `rooflab_kernels::cluster_row`): the cluster size a launch uses, and its block
//! shape.

use rooflab_kernels::cluster_row::{
    HEADER_BYTES, MAX_CLUSTER, MAX_SHARED_BYTES, block_threads, cluster_size, reg_block_threads,
    reg_cluster_size, shared_bytes, slice_cols,
};
use rooflab_kernels::row_layout::ROW_MAX_COLS;

use std::cell::Cell;

use crate::error::{Error, Result};

/// Environment variable that forces the cluster size of every cluster-row launch (1, 2, 4 or
/// 8) instead of `cluster_size`'s choice: for measuring that choice (`cargo xtask bench
/// --family softmax --variant v07` once per size). Unset or empty: the choice.
pub const FORCE_ENV: &str = "ROOFLAB_CLUSTER_ROW";

/// Where the blocks of a cluster keep their slices of the row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Keep {
    /// In shared memory, copied in by `cp.async` (softmax v07, norm v06).
    Shared,
    /// In registers, 16 elements a thread (softmax v08, norm v07).
    Registers,
}

/// A cluster-row launch for rows of `cols`: blocks a cluster, threads a block, dynamic
/// shared bytes a block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    pub cluster: u32,
    pub threads: u32,
    pub shared_bytes: u32,
}

impl Geometry {
    /// The geometry for `cluster` blocks a row; refused (naming `op`, the row and what to
    /// do) when a block's slice would not fit where it is kept.
    pub fn with_cluster(
        op: &str,
        cols: u32,
        elem_bytes: u32,
        cluster: u32,
        keep: Keep,
    ) -> Result<Geometry> {
        let refuse = |what: String| {
            Err(Error::Shape {
                op: op.into(),
                what: format!(
                    "rows of {cols} elements in clusters of {cluster} blocks {what}: use more \
                     blocks a row (unset {FORCE_ENV})"
                ),
            })
        };
        match keep {
            Keep::Shared => {
                let shared = shared_bytes(cols, elem_bytes, cluster);
                if shared > MAX_SHARED_BYTES {
                    return refuse(format!(
                        "need {shared} bytes of shared memory a block, more than the \
                         {MAX_SHARED_BYTES} a block may have"
                    ));
                }
                Ok(Geometry {
                    cluster,
                    threads: block_threads(cols, elem_bytes, cluster),
                    shared_bytes: shared,
                })
            }
            Keep::Registers => {
                let slice = slice_cols(cols, elem_bytes, cluster);
                if slice > ROW_MAX_COLS {
                    return refuse(format!(
                        "have slices of {slice} elements, more than the {ROW_MAX_COLS} a \
                         block holds in registers"
                    ));
                }
                Ok(Geometry {
                    cluster,
                    threads: reg_block_threads(cols, elem_bytes, cluster),
                    shared_bytes: HEADER_BYTES,
                })
            }
        }
    }

    /// The geometry chosen for rows of `cols` (`cluster_size` or `reg_cluster_size`; the
    /// variants' limits keep its slices where they fit).
    pub fn chosen(cols: u32, elem_bytes: u32, keep: Keep) -> Geometry {
        let cluster = match keep {
            Keep::Shared => cluster_size(cols, elem_bytes),
            Keep::Registers => reg_cluster_size(cols, elem_bytes),
        };
        match keep {
            Keep::Shared => Geometry {
                cluster,
                threads: block_threads(cols, elem_bytes, cluster),
                shared_bytes: shared_bytes(cols, elem_bytes, cluster),
            },
            Keep::Registers => Geometry {
                cluster,
                threads: reg_block_threads(cols, elem_bytes, cluster),
                shared_bytes: HEADER_BYTES,
            },
        }
    }

    /// The geometry a launch uses: the size of an enclosing [`with_cluster`] on this thread,
    /// else `FORCE_ENV`'s when set, else [`Geometry::chosen`].
    pub fn for_launch(op: &str, cols: u32, elem_bytes: u32, keep: Keep) -> Result<Geometry> {
        let scoped = SCOPED.with(Cell::get);
        let c = match scoped {
            Some(c) => Some(c),
            None => forced(std::env::var(FORCE_ENV).ok().as_deref())?,
        };
        match c {
            Some(c) => Geometry::with_cluster(op, cols, elem_bytes, c, keep),
            None => Ok(Geometry::chosen(cols, elem_bytes, keep)),
        }
    }
}

thread_local! {
    /// The cluster size [`with_cluster`] set on this thread.
    static SCOPED: Cell<Option<u32>> = const { Cell::new(None) };
}

/// Runs `f` with every cluster-row launch it makes on this thread using `cluster` blocks a
/// row (1, 2, 4 or 8) instead of the chosen size: how the GPU tests check every size, and a
/// caller compares them. A size past a block's shared memory for some row is that launch's
/// error.
pub fn with_cluster<R>(cluster: u32, f: impl FnOnce() -> Result<R>) -> Result<R> {
    let c = forced(Some(&cluster.to_string()))?;
    let before = SCOPED.with(|s| s.replace(c));
    let r = f();
    SCOPED.with(|s| s.set(before));
    r
}

/// (rows, cols) the GPU tests check at every cluster size: a short row (most blocks of a
/// cluster own nothing), odd lengths (scalar layout, short last slices), the bench's 32768,
/// and the softmax's longest rows (past a block's shared memory or registers in one block).
pub const SIZE_TEST_SHAPES: [(usize, usize); 7] = [
    (3, 31),
    (5, 4097),
    (17, 16385),
    (3, 32768),
    (1, 65537),
    (2, 131072),
    (2, 262144),
];

/// The GPU tests' loop over cluster sizes: `check(rows, cols, i)` under [`with_cluster`] for
/// every size and every shape of `SIZE_TEST_SHAPES` (those a sanitizer's limit keeps); where a block's slice would not fit
/// its shared memory, `check` must fail with that refusal (naming the cluster size), and
/// does not count as checked. Errors name the cluster size. `max_cols`: the variant's
/// longest row (longer shapes are left out).
pub fn check_every_size(
    elem_bytes: u32,
    keep: Keep,
    max_cols: usize,
    check: impl Fn(usize, usize, u64) -> Result<()>,
) -> Result<()> {
    for c in [1, 2, 4, MAX_CLUSTER] {
        // Under a sanitizer only the shapes within its limit (crate::testing::matrices).
        for (i, &(rows, cols)) in crate::testing::matrices(&SIZE_TEST_SHAPES)
            .iter()
            .enumerate()
        {
            if cols > max_cols {
                continue;
            }
            let fits = Geometry::with_cluster("t", cols as u32, elem_bytes, c, keep).is_ok();
            let r = with_cluster(c, || check(rows, cols, i as u64));
            match (fits, r) {
                (true, Ok(())) => {}
                (true, Err(e)) => {
                    return Err(Error::Mismatch(format!("clusters of {c} blocks: {e}")));
                }
                (false, Err(e)) if e.to_string().contains(&format!("clusters of {c} ")) => {}
                (false, r) => {
                    return Err(Error::Mismatch(format!(
                        "{rows}x{cols} in clusters of {c} blocks does not fit and was not \
                         refused: {r:?}"
                    )));
                }
            }
        }
    }
    Ok(())
}

/// `FORCE_ENV`'s value: `None` unset or empty, the size when it is 1, 2, 4 or 8, else an
/// error that says what it takes.
fn forced(value: Option<&str>) -> Result<Option<u32>> {
    let Some(v) = value.map(str::trim).filter(|v| !v.is_empty()) else {
        return Ok(None);
    };
    match v.parse::<u32>() {
        Ok(c) if c.is_power_of_two() && c <= MAX_CLUSTER => Ok(Some(c)),
        _ => Err(Error::Other(format!(
            "{FORCE_ENV}={v}: the cluster-row kernels take 1, 2, 4 or {MAX_CLUSTER} blocks a \
             row (or unset it for the size chosen from the row length)"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rooflab_kernels::cluster_row::{TARGET_SLICE_BYTES, slice_cols};

    #[test]
    fn the_chosen_size_is_the_fewest_blocks_with_slices_under_the_target() {
        for e in [2u32, 4] {
            for cols in [
                1u32, 100, 4096, 16384, 16385, 32768, 65536, 131072, 262144, 393216,
            ] {
                let g = Geometry::chosen(cols, e, Keep::Shared);
                assert!(g.cluster.is_power_of_two() && g.cluster <= MAX_CLUSTER);
                let bytes = |c| slice_cols(cols, e, c) * e;
                assert!(g.cluster == MAX_CLUSTER || bytes(g.cluster) <= TARGET_SLICE_BYTES);
                assert!(
                    g.cluster == 1 || bytes(g.cluster / 2) > TARGET_SLICE_BYTES,
                    "{cols}"
                );
                assert!(g.shared_bytes <= MAX_SHARED_BYTES, "cols={cols} e={e}");
            }
        }
        // The bench's long rows: bf16 32768 in two blocks of 32 KiB, f32 in four.
        assert_eq!(Geometry::chosen(32768, 2, Keep::Shared).cluster, 2);
        assert_eq!(Geometry::chosen(32768, 4, Keep::Shared).cluster, 4);
        assert_eq!(Geometry::chosen(262144, 4, Keep::Shared).cluster, 8);
    }

    /// The register-kept layout: slices of at most 8192 elements (512 threads) where 8 blocks
    /// suffice, never more than a block's 16384 registers' worth up to its longest row.
    #[test]
    fn the_register_layout_keeps_slices_in_registers() {
        use rooflab_kernels::cluster_row::{REG_MAX_COLS, REG_TARGET_SLICE};
        for e in [2u32, 4] {
            for cols in [1u32, 100, 8192, 8193, 16385, 32768, 65536, 65537, 131072] {
                let g = Geometry::chosen(cols, e, Keep::Registers);
                let slice = slice_cols(cols, e, g.cluster);
                assert!(slice <= ROW_MAX_COLS && g.threads * 16 >= slice, "{cols}");
                assert!(g.cluster == MAX_CLUSTER || slice <= REG_TARGET_SLICE, "{cols}");
                assert!(g.cluster == 1 || slice_cols(cols, e, g.cluster / 2) > REG_TARGET_SLICE);
                assert_eq!(g.shared_bytes, HEADER_BYTES);
                assert_eq!(g, Geometry::with_cluster("t", cols, e, g.cluster, Keep::Registers).unwrap());
            }
            assert_eq!(Geometry::chosen(32768, e, Keep::Registers).cluster, 4);
            assert_eq!(Geometry::chosen(32768, e, Keep::Registers).threads, 512);
            assert_eq!(Geometry::chosen(REG_MAX_COLS, e, Keep::Registers).threads, 1024);
            let err = Geometry::with_cluster("softmax/v08", 32768, e, 1, Keep::Registers)
                .unwrap_err()
                .to_string();
            assert!(err.contains("32768") && err.contains("registers"), "{err}");
        }
    }

    /// For every cluster size, the slices cover each element of a row once, in order, each
    /// starting on a 16-byte vector, and the block size is whole warps within the limit.
    #[test]
    fn slices_cover_each_element_once() {
        use rooflab_kernels::cluster_row::{MAX_THREADS, slice};
        let lengths = [
            1u32, 2, 7, 8, 31, 127, 128, 129, 4097, 16385, 32768, 65537, 262143,
        ];
        for cols in lengths {
            for e in [2u32, 4] {
                for cluster in [1, 2, 4, 8] {
                    let per16 = 16 / e;
                    let mut seen = vec![0u8; cols as usize];
                    let mut next = 0;
                    for rank in 0..cluster {
                        let (start, len) = slice(rank, cols, e, cluster);
                        assert!(start.is_multiple_of(per16), "cols={cols} rank={rank}");
                        if len > 0 {
                            assert_eq!(start, next, "slices in order, no gaps");
                            next = start + len;
                        }
                        for j in start..start + len {
                            seen[j as usize] += 1;
                        }
                    }
                    assert!(
                        seen.iter().all(|&s| s == 1),
                        "cols={cols} e={e} c={cluster}"
                    );
                    let b = block_threads(cols, e, cluster);
                    assert!(
                        b.is_multiple_of(32) && (32..=MAX_THREADS).contains(&b),
                        "{cols}"
                    );
                }
            }
        }
    }

    #[test]
    fn a_forced_size_is_checked() {
        assert_eq!(forced(None).unwrap(), None);
        assert_eq!(forced(Some(" ")).unwrap(), None);
        for c in [1, 2, 4, 8] {
            assert_eq!(forced(Some(&c.to_string())).unwrap(), Some(c));
        }
        for bad in ["0", "3", "16", "two"] {
            let e = forced(Some(bad)).unwrap_err().to_string();
            assert!(
                e.contains(FORCE_ENV) && e.contains(bad) && e.contains("1, 2, 4"),
                "{e}"
            );
        }
        // The scoped size wins over the choice, is checked, and is restored after.
        let g = with_cluster(2, || Geometry::for_launch("t", 32768, 4, Keep::Shared)).unwrap();
        assert_eq!(g.cluster, 2);
        assert!(with_cluster(3, || Ok(())).is_err());
        if std::env::var(FORCE_ENV).is_err() {
            assert_eq!(Geometry::for_launch("t", 32768, 4, Keep::Shared).unwrap().cluster, 4);
        }
        // A slice past a block's shared memory is refused, not launched.
        let e = Geometry::with_cluster("softmax/v07", 262144, 4, 1, Keep::Shared)
            .unwrap_err()
            .to_string();
        assert!(e.contains("262144") && e.contains("clusters of 1"), "{e}");
        Geometry::with_cluster("softmax/v07", 262144, 4, 8, Keep::Shared).unwrap();
    }
}
