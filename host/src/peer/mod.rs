//! In-process peer libraries: what a user would call instead of a rooflab kernel, run on the
//! same device buffers, in the same (primary) context, on the same stream. (PyTorch runs in
//! its own process: the `torch_peer` module.)

pub mod cublas;
