//! Family `memory`: how the access pattern alone decides bandwidth.
//!
//! Two tiny ops, a copy (`dst = src`) and saxpy (`y = a*x + y`), carried up a ladder from a
//! deliberately uncoalesced version to one that keeps many 16-byte loads in flight, plus the
//! array-of-structs versus struct-of-arrays layout of one particle update.
//! All sizes are in f32 elements and 64-bit, so arrays past 2^32 elements work.

pub mod v01_strided;
pub mod v02_coalesced;
pub mod v03_vectorized;
pub mod v04_grid_stride_ilp;
pub mod v05_particles_aos;
pub mod v06_particles_soa;

/// One particle as the array-of-structs layout stores it: 8 f32 = 32 bytes.
/// Only `pos` and `vel` take part in the update; `mass` and `charge` ride along, which is
/// exactly the waste the AoS layout pays for.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Particle {
    pub pos: [f32; 3],
    pub vel: [f32; 3],
    pub mass: f32,
    pub charge: f32,
}

/// f32 words per `Particle` (the host moves AoS data as a flat f32 buffer).
pub const PARTICLE_F32S: usize = core::mem::size_of::<Particle>() / 4;

/// How a 16-byte-vectorized kernel splits `0..n` for two pointers with the same alignment:
/// `head` scalar elements up to the first 16-byte boundary, `vectors` groups of four, then a
/// scalar tail. Pointers whose alignments differ cannot share one split (`None`): kernels then
/// fall back to scalar access.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VectorSplit {
    pub head: u64,
    pub vectors: u64,
    pub tail: u64,
}

impl VectorSplit {
    /// `a_addr` and `b_addr` are the byte addresses of the two arrays' first elements.
    #[inline(always)]
    pub fn new(a_addr: u64, b_addr: u64, n: u64) -> Option<VectorSplit> {
        if a_addr & 15 != b_addr & 15 || a_addr & 3 != 0 {
            return None;
        }
        let head = (((16 - (a_addr & 15)) & 15) / 4).min(n);
        let vectors = (n - head) / 4;
        Some(VectorSplit {
            head,
            vectors,
            tail: n - head - 4 * vectors,
        })
    }

    /// First element of the scalar tail.
    #[inline(always)]
    pub fn tail_start(&self) -> u64 {
        self.head + 4 * self.vectors
    }
}
