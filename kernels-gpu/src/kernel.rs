//! A kernel's identity, defined once, next to its body.
//!
//! Every kernel entry is written through [`kernel!`](crate::kernel!):
//!
//! ```ignore
//! rooflab_kernels::kernel! {
//!     /// `dst = src`.
//!     pub unsafe fn memory_v03_vectorized_copy(src: *const f32, dst: *mut f32, n: u64) { ... }
//! }
//! ```
//!
//! Compiled for `nvptx64` it is the `#[no_mangle] extern "gpu-kernel"` entry, exactly as if
//! written by hand (the PTX is the same). Compiled for the host it is a constant of the same
//! name, a [`Kernel`] typed by the entry's parameter list, which is all the host needs: the
//! name it looks the function up by (once per module load) and the argument types a launch
//! must match. So the host never spells a kernel name, and a launch whose arguments do not
//! fit the entry's signature does not compile.

use core::marker::PhantomData;

/// The identity of one kernel entry, without its parameter types: what bench rows, tests
/// and tools carry to name the kernels they use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct KernelId {
    name: &'static str,
    /// `module_path!()` where the entry is defined, e.g.
    /// `rooflab_kernels::memory::v03_vectorized`: its family and variant file, by value.
    module: &'static str,
}

impl KernelId {
    /// The PTX entry name, e.g. `memory_v03_vectorized_copy`.
    pub const fn name(self) -> &'static str {
        self.name
    }
    /// The family (folder) the entry is defined in, e.g. `memory`.
    pub fn family(self) -> &'static str {
        self.module.split("::").nth(1).unwrap_or("")
    }
    /// The stem of the variant file the entry is defined in, e.g. `v03_vectorized`.
    pub fn stem(self) -> &'static str {
        self.module.rsplit("::").next().unwrap_or("")
    }
}

impl core::fmt::Display for KernelId {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.name)
    }
}

/// A kernel entry whose parameters are the tuple `A`, e.g. `(*const f32, *mut f32, u64)`.
/// Made only by [`kernel!`](crate::kernel!).
pub struct Kernel<A> {
    id: KernelId,
    _params: PhantomData<fn(A)>,
}

impl<A> Kernel<A> {
    /// Used by `kernel!`; `name` is `stringify!` of the entry's own identifier.
    #[doc(hidden)]
    pub const fn __new(name: &'static str, module: &'static str) -> Kernel<A> {
        Kernel {
            id: KernelId { name, module },
            _params: PhantomData,
        }
    }
    pub const fn id(&self) -> KernelId {
        self.id
    }
    pub const fn name(&self) -> &'static str {
        self.id.name
    }
    /// See [`KernelId::family`].
    pub fn family(&self) -> &'static str {
        self.id.family()
    }
    /// See [`KernelId::stem`].
    pub fn stem(&self) -> &'static str {
        self.id.stem()
    }
}

impl<A> Clone for Kernel<A> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<A> Copy for Kernel<A> {}

impl<A> core::fmt::Debug for Kernel<A> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "Kernel({})", self.id.name)
    }
}

impl<A> core::fmt::Display for Kernel<A> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.id.name)
    }
}

impl<A> From<Kernel<A>> for KernelId {
    fn from(k: Kernel<A>) -> KernelId {
        k.id
    }
}

/// Defines one kernel entry (see the module docs). The parameter list is plain
/// `name: Type` pairs; attributes and doc comments go on the device function.
#[macro_export]
macro_rules! kernel {
    (
        $(#[$attr:meta])*
        pub unsafe fn $name:ident ( $( $arg:ident : $ty:ty ),* $(,)? ) $body:block
    ) => {
        $(#[$attr])*
        ///
        /// # Safety
        /// Launch it through its host wrapper (`host/src/ops/FAMILY/launch.rs`), which checks
        /// the sizes against the buffers and sets the launch geometry the body assumes.
        #[cfg(target_arch = "nvptx64")]
        #[unsafe(no_mangle)]
        pub unsafe extern "gpu-kernel" fn $name( $( $arg : $ty ),* ) $body

        #[doc = concat!("The kernel entry `", stringify!($name), "` (see its definition here).")]
        #[cfg(not(target_arch = "nvptx64"))]
        #[allow(non_upper_case_globals)]
        pub const $name: $crate::kernel::Kernel<( $( $ty, )* )> =
            $crate::kernel::Kernel::__new(stringify!($name), module_path!());
    };
}
