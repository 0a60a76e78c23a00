//! In-process peer libraries: what a user would call instead of a rooflab kernel, run on the
//! same device buffers, in the same (primary) context, on the same stream.

pub mod cublas;
