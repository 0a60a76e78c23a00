//! The `Gpu` handle: one device, its primary context, rooflab's PTX module, one stream.
//!
//! Everything device-side goes through here: allocation (checked against free memory),
//! upload/download, poisoning, the launch path (which names the kernel in every error), and
//! event timing. Ops never call `cust` directly except to name buffer types.

use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::{CStr, CString, c_void};
use std::marker::PhantomData;
use std::ops::Range;

use cust::context::Context;
use cust::device::{Device, DeviceAttribute};
use cust::error::CudaError;
use cust::event::{Event, EventFlags};
use cust::function::Function;
use cust::memory::{CopyDestination, DeviceBuffer, DeviceCopy};
use cust::module::Module;
use cust::stream::{Stream, StreamFlags};

use crate::error::{CudaResultExt, Error, Result, is_sticky};
use crate::ptx;

pub use rooflab_kernels::kernel::{Kernel, KernelId};

/// What rooflab knows about the device it runs on.
#[derive(Clone, Debug, serde::Serialize)]
pub struct DeviceInfo {
    pub name: String,
    pub ordinal: u32,
    pub compute_capability: (i32, i32),
    pub multiprocessors: u32,
    pub l2_bytes: u64,
    pub total_memory: u64,
    pub max_shared_per_block_optin: u32,
    pub sm_clock_mhz: u32,
    pub memory_clock_mhz: u32,
    pub memory_bus_bits: u32,
    /// As the driver reports it: 1000 * major + 10 * minor.
    pub driver_cuda_version: i32,
    pub ptx_arch: &'static str,
}

/// Raw driver entry points whose exact result codes we need: cust maps codes newer than its
/// CUDA 11.4 headers to `UnknownError`, which would lose "unsupported PTX version".
mod raw {
    use std::ffi::{c_char, c_int, c_uint, c_void};
    #[link(name = "cuda")]
    unsafe extern "C" {
        pub fn cuInit(flags: c_uint) -> c_int;
        pub fn cuDriverGetVersion(version: *mut c_int) -> c_int;
        pub fn cuGetErrorName(code: c_int, name: *mut *const c_char) -> c_int;
        #[link_name = "cuModuleLoadDataEx"]
        pub fn cuModuleLoadDataEx(
            module: *mut *mut c_void,
            image: *const c_void,
            n: c_uint,
            options: *mut c_int,
            values: *mut *mut c_void,
        ) -> c_int;
        pub fn cuModuleUnload(module: *mut c_void) -> c_int;
        pub fn cuMemsetD32Async(dst: u64, value: c_uint, n: usize, stream: *mut c_void) -> c_int;
        #[link_name = "cuMemcpyDtoDAsync_v2"]
        pub fn cuMemcpyDtoDAsync(dst: u64, src: u64, bytes: usize, stream: *mut c_void) -> c_int;
        pub fn cuDeviceGetAttribute(value: *mut c_int, attr: c_int, device: c_int) -> c_int;
        pub fn cuFuncSetAttribute(func: *mut c_void, attr: c_int, value: c_int) -> c_int;
    }
}

/// The name of a raw CUDA result code, e.g. `CUDA_ERROR_UNSUPPORTED_PTX_VERSION`.
fn error_name(code: i32) -> String {
    let mut p = std::ptr::null();
    // SAFETY: cuGetErrorName writes a pointer to a static string or fails.
    let ok = unsafe { raw::cuGetErrorName(code, &mut p) } == 0 && !p.is_null();
    if ok {
        // SAFETY: the driver returned a NUL-terminated static string.
        format!(
            "{} ({code})",
            unsafe { CStr::from_ptr(p) }.to_string_lossy()
        )
    } else {
        format!("CUDA error {code}")
    }
}

/// A quiet-NaN bit pattern written into every output before a launch, so that an element a
/// kernel fails to write can never pass a comparison.
pub const POISON_F32_BITS: u32 = 0x7fc0_dead;

pub struct Gpu {
    pub info: DeviceInfo,
    /// Leaked at load and reclaimed in `Drop`, so that the cached [`Function`]s (which borrow
    /// it) can live in the same struct.
    module: &'static Module,
    stream: Stream,
    /// Function handles, looked up once per module load (on first use) and kept: a launch
    /// does no name lookup and no allocation.
    functions: RefCell<HashMap<KernelId, Function<'static>>>,
    /// The last kernel launched: a fault found at the next synchronization is reported
    /// against it.
    last_kernel: std::cell::Cell<Option<KernelId>>,
    /// TMA tensor maps uploaded so far, by what they encode (filled by the tma module).
    pub(crate) tensor_maps: RefCell<HashMap<[u64; 7], DeviceArray<u64>>>,
    /// `max_active_clusters` answers, per kernel.
    active_clusters: RefCell<HashMap<KernelId, u32>>,
    /// [`Gpu::runs`] answers, per kernel.
    runs_known: RefCell<HashMap<KernelId, bool>>,
    /// The CUDA C++ twins' module (`ptx::TWINS`), loaded on first use and leaked like
    /// `module`; `Err` says why there is none.
    twins: std::cell::OnceCell<std::result::Result<&'static Module, String>>,
    /// Twin functions, by the Rust kernel they are the twin of.
    twin_functions: RefCell<HashMap<KernelId, Function<'static>>>,
    /// While set (`as_twin`), every launch runs the kernel's CUDA C++ twin instead.
    twin_mode: std::cell::Cell<bool>,
    /// Scratch memory for ops that need it between their kernels (gemm v12's split-K
    /// partials): allocated on first use, grown when a larger one is asked for, kept, so
    /// timed launches allocate nothing.
    workspace: RefCell<Option<DeviceArray<f32>>>,
    /// Counters that kernels leave at 0 (decode v07's last-block tickets): zeroed when
    /// allocated or grown, kept.
    counters: RefCell<Option<DeviceArray<u32>>>,
    _context: Context,
}

impl Gpu {
    /// The device named by `ROOFLAB_DEVICE` (an ordinal, default 0).
    pub fn new() -> Result<Gpu> {
        let ordinal = match std::env::var("ROOFLAB_DEVICE") {
            Ok(s) => s.parse::<u32>().map_err(|_| {
                Error::Other(format!(
                    "ROOFLAB_DEVICE={s:?} is not a device ordinal (0, 1, ...)"
                ))
            })?,
            Err(_) => 0,
        };
        Self::with_ordinal(ordinal)
    }

    pub fn with_ordinal(ordinal: u32) -> Result<Gpu> {
        // SAFETY: cuInit may be called any number of times.
        let code = unsafe { raw::cuInit(0) };
        match code {
            0 => {}
            35 => {
                return Err(Error::DriverTooOld {
                    have: "older than the CUDA runtime interface rooflab uses".into(),
                    need: "11.8".into(),
                    isa: "7.8".into(),
                });
            }
            // No GPU or no driver here: CUDA_ERROR_NO_DEVICE, or the toolkit's stub libcuda
            // (CUDA_ERROR_STUB_LIBRARY). The only cases the GPU tests report as skipped.
            100 | 34 => return Err(Error::NoDevice(error_name(code))),
            _ => {
                return Err(Error::DriverBroken {
                    code: error_name(code),
                    hint: crate::error::init_hint(code).into(),
                });
            }
        }
        let count = Device::num_devices().cuda("cuDeviceGetCount")?;
        if count == 0 {
            return Err(Error::NoDevice("no devices listed".into()));
        }
        if ordinal >= count {
            return Err(Error::Other(format!(
                "device {ordinal} asked for (ROOFLAB_DEVICE), but only {count} CUDA device(s) exist: use 0..{}",
                count - 1
            )));
        }
        let device = Device::get_device(ordinal).cuda("cuDeviceGet")?;
        let attr = |a| device.get_attribute(a).cuda("cuDeviceGetAttribute");
        let cc = (
            attr(DeviceAttribute::ComputeCapabilityMajor)?,
            attr(DeviceAttribute::ComputeCapabilityMinor)?,
        );
        let name = device.name().cuda("cuDeviceGetName")?;
        let mut driver = 0;
        // SAFETY: writes one int.
        unsafe { raw::cuDriverGetVersion(&mut driver) };

        let Some((arch, ptx_text)) = ptx::choose(cc.0, cc.1) else {
            return Err(Error::NoPtxForDevice {
                device: name,
                cc: format!("{}.{}", cc.0, cc.1),
                oldest: ptx::built().first().map(|p| p.0).unwrap_or("none").into(),
            });
        };
        let isa = ptx::isa_version(ptx_text);
        if let Some(need) = ptx::cuda_version_for_isa(isa)
            && driver < need
        {
            return Err(Error::DriverTooOld {
                have: ptx::format_cuda_version(driver),
                need: ptx::format_cuda_version(need),
                isa: isa.into(),
            });
        }

        let context = Context::new(device).cuda("cuDevicePrimaryCtxRetain")?;
        let module: &'static Module = Box::leak(Box::new(load_module(arch, ptx_text, driver)?));
        let stream = Stream::new(StreamFlags::NON_BLOCKING, None).cuda("cuStreamCreate")?;
        let info = DeviceInfo {
            name,
            ordinal,
            compute_capability: cc,
            multiprocessors: attr(DeviceAttribute::MultiprocessorCount)? as u32,
            l2_bytes: attr(DeviceAttribute::L2CacheSize)? as u64,
            total_memory: device.total_memory().cuda("cuDeviceTotalMem")? as u64,
            max_shared_per_block_optin: {
                // CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN (97) is past cust's enum.
                let mut v = 0;
                // SAFETY: writes one int for a valid device ordinal.
                unsafe { raw::cuDeviceGetAttribute(&mut v, 97, ordinal as i32) };
                v as u32
            },
            sm_clock_mhz: attr(DeviceAttribute::ClockRate)? as u32 / 1000,
            memory_clock_mhz: attr(DeviceAttribute::MemoryClockRate)? as u32 / 1000,
            memory_bus_bits: attr(DeviceAttribute::GlobalMemoryBusWidth)? as u32,
            driver_cuda_version: driver,
            ptx_arch: arch,
        };
        Ok(Gpu {
            info,
            module,
            stream,
            functions: RefCell::new(HashMap::new()),
            last_kernel: std::cell::Cell::new(None),
            tensor_maps: RefCell::new(HashMap::new()),
            active_clusters: RefCell::new(HashMap::new()),
            runs_known: RefCell::new(HashMap::new()),
            twins: std::cell::OnceCell::new(),
            twin_functions: RefCell::new(HashMap::new()),
            twin_mode: std::cell::Cell::new(false),
            workspace: RefCell::new(None),
            counters: RefCell::new(None),
            _context: context,
        })
    }

    /// One line for logs: "NVIDIA H200 (sm_90, 132 SMs, 60 MiB L2, driver CUDA 13.0, PTX sm_90)".
    pub fn describe(&self) -> String {
        let i = &self.info;
        format!(
            "{} (cc {}.{}, {} SMs, {} MiB L2, {:.0} GiB, driver CUDA {}, PTX {})",
            i.name,
            i.compute_capability.0,
            i.compute_capability.1,
            i.multiprocessors,
            i.l2_bytes >> 20,
            i.total_memory as f64 / (1u64 << 30) as f64,
            ptx::format_cuda_version(i.driver_cuda_version),
            i.ptx_arch
        )
    }

    /// The raw `CUstream` of this Gpu's stream, for peer libraries (cuBLAS) that must be
    /// ordered with rooflab's launches. Valid as long as the Gpu lives.
    pub fn raw_stream(&self) -> *mut c_void {
        self.stream.as_inner().cast()
    }

    /// (free, total) device memory in bytes.
    pub fn memory_info(&self) -> Result<(u64, u64)> {
        let (free, total) = cust::memory::mem_get_info().cuda("cuMemGetInfo")?;
        Ok((free as u64, total as u64))
    }

    /// An uninitialized device array of `len` elements. Refused, with the numbers, when it
    /// cannot fit in free memory. `len == 0` gives an empty array and allocates nothing.
    pub fn alloc<T: DeviceCopy>(&self, len: usize) -> Result<DeviceArray<T>> {
        if len == 0 {
            return Ok(DeviceArray { buf: None, len: 0 });
        }
        let bytes = (len as u64).saturating_mul(size_of::<T>() as u64);
        let (free, total) = self.memory_info()?;
        let oom = || Error::OutOfMemory {
            requested: bytes,
            requested_gib: bytes as f64 / (1u64 << 30) as f64,
            free,
            total,
        };
        if bytes > free {
            return Err(oom());
        }
        // SAFETY: uninitialized device memory is fine for DeviceCopy types; every user either
        // uploads or poisons before reading.
        match unsafe { DeviceBuffer::uninitialized(len) } {
            Ok(buf) => Ok(DeviceArray {
                buf: Some(buf),
                len,
            }),
            Err(CudaError::OutOfMemory) => Err(oom()),
            Err(source) => Err(Error::Cuda {
                call: "cuMemAlloc",
                source,
            }),
        }
    }

    /// A device copy of `data`.
    pub fn upload<T: DeviceCopy>(&self, data: &[T]) -> Result<DeviceArray<T>> {
        let mut a = self.alloc(data.len())?;
        a.copy_from_host(data)?;
        Ok(a)
    }

    /// Fill `view` (4-byte elements) with the NaN poison pattern, stream-ordered.
    pub fn poison<T: DeviceCopy>(&self, view: ViewMut<'_, T>) -> Result<()> {
        assert_eq!(size_of::<T>(), 4, "poison() is for 4-byte elements");
        self.memset_u32(view.addr, POISON_F32_BITS, view.len)
    }

    /// Fill `view` (4-byte elements) with zero bits (0.0 as f32), stream-ordered: the start
    /// value of an accumulator that kernels add into atomically.
    pub fn zero<T: DeviceCopy>(&self, view: ViewMut<'_, T>) -> Result<()> {
        assert_eq!(size_of::<T>(), 4, "zero() is for 4-byte elements");
        self.memset_u32(view.addr, 0, view.len)
    }

    /// Fill `len` 4-byte words at `addr` with `value`, stream-ordered.
    fn memset_u32(&self, addr: u64, value: u32, len: usize) -> Result<()> {
        if len == 0 {
            return Ok(());
        }
        // SAFETY: the caller's view covers `len` words of a live allocation.
        let code =
            unsafe { raw::cuMemsetD32Async(addr, value, len, self.stream.as_inner().cast()) };
        if code != 0 {
            return Err(Error::Other(format!(
                "cuMemsetD32Async failed: {}",
                error_name(code)
            )));
        }
        Ok(())
    }

    /// `dst = src` through the copy engine / driver path (cuMemcpyDtoD): the copy ceiling.
    pub fn copy_device<T: DeviceCopy>(&self, src: View<'_, T>, dst: ViewMut<'_, T>) -> Result<()> {
        if src.len != dst.len {
            return Err(Error::Shape {
                op: "copy_device".into(),
                what: format!("{} vs {} elements", src.len, dst.len),
            });
        }
        let bytes = src.len * size_of::<T>();
        // SAFETY: both views are live and `bytes` long.
        let code = unsafe {
            raw::cuMemcpyDtoDAsync(dst.addr, src.addr, bytes, self.stream.as_inner().cast())
        };
        if code != 0 {
            return Err(Error::Other(format!(
                "cuMemcpyDtoDAsync failed: {}",
                error_name(code)
            )));
        }
        Ok(())
    }

    /// Whether `kernel` can run on this GPU: `Err(Unavailable)` when only a PTX that this
    /// device cannot load has it (an sm_90a-only step on anything but compute capability 9.0).
    pub fn available(&self, kernel: impl Into<KernelId>) -> Result<()> {
        let kernel = kernel.into();
        if self.functions.borrow().contains_key(&kernel) {
            return Ok(());
        }
        match ptx::first_arch_with(kernel.name()) {
            Some(_) if ptx_has_entry(self.info.ptx_arch, kernel.name()) => Ok(()),
            Some(needs) => Err(Error::Unavailable {
                kernel: kernel.name().into(),
                needs: needs.into(),
                device: format!(
                    "{} (compute capability {}.{})",
                    self.info.name, self.info.compute_capability.0, self.info.compute_capability.1
                ),
                loaded: self.info.ptx_arch.into(),
            }),
            None => Err(Error::MissingKernel(kernel.name().into())),
        }
    }

    /// Whether `kernel` can run on this GPU (see [`Gpu::available`]: `false` for a step only
    /// a PTX this device cannot load has), an error only when no built PTX has it. The answer
    /// is kept per kernel: finding it searches the PTX text (milliseconds), which an op that
    /// asks before every launch (`auto` choosing a cluster step) must not do each time.
    pub fn runs(&self, kernel: impl Into<KernelId>) -> Result<bool> {
        let kernel = kernel.into();
        if let Some(&b) = self.runs_known.borrow().get(&kernel) {
            return Ok(b);
        }
        let b = match self.available(kernel) {
            Ok(()) => true,
            Err(Error::Unavailable { .. }) => false,
            Err(e) => return Err(e),
        };
        self.runs_known.borrow_mut().insert(kernel, b);
        Ok(b)
    }

    /// The driver's handle of `kernel` in the loaded module, looked up on first use.
    fn function(&self, kernel: KernelId) -> Result<std::cell::Ref<'_, Function<'static>>> {
        if !self.functions.borrow().contains_key(&kernel) {
            self.available(kernel)?;
            let f = self
                .module
                .get_function(kernel.name())
                .map_err(|_| Error::MissingKernel(kernel.name().into()))?;
            self.functions.borrow_mut().insert(kernel, f);
        }
        Ok(std::cell::Ref::map(self.functions.borrow(), |m| {
            &m[&kernel]
        }))
    }

    /// The twins' module, loaded on first use (`Err`: why there is none).
    fn twin_module(&self) -> std::result::Result<&'static Module, String> {
        self.twins
            .get_or_init(|| {
                let text = ptx::twins_for(self.info.ptx_arch)?;
                load_module(self.info.ptx_arch, text, self.info.driver_cuda_version)
                    .map(|m| &*Box::leak(Box::new(m)))
                    .map_err(|e| format!("the CUDA C++ twins' PTX did not load: {e}"))
            })
            .clone()
    }

    /// `Ok` when every kernel in `kernels` has a CUDA C++ twin this GPU can run; otherwise
    /// why not (no twins built, none for this kernel, the module did not load).
    pub fn twins_available(&self, kernels: &[KernelId]) -> std::result::Result<(), String> {
        if kernels.is_empty() {
            return Err("no kernel".into());
        }
        let text = ptx::twins_for(self.info.ptx_arch)?;
        if let Some(k) = kernels.iter().find(|k| !ptx::has_twin(text, k.name())) {
            return Err(format!("no CUDA C++ twin of `{}`", k.name()));
        }
        self.twin_module().map(|_| ())
    }

    /// Runs `f` with every launch going to the launched kernel's CUDA C++ twin (same
    /// arguments, same launch geometry): how the bench and the tests run the twins through
    /// the same host code as the Rust kernels. A kernel without a twin fails its launch.
    pub fn as_twin<R>(&self, f: impl FnOnce() -> R) -> R {
        struct Reset<'a>(&'a std::cell::Cell<bool>, bool);
        impl Drop for Reset<'_> {
            fn drop(&mut self) {
                self.0.set(self.1);
            }
        }
        let _reset = Reset(&self.twin_mode, self.twin_mode.replace(true));
        f()
    }

    /// Runs `f` with this GPU's workspace, at least `len` f32 (allocated or grown first;
    /// the contents are whatever the last user left). Not reentrant: an op that is already
    /// inside gets an error, not a second buffer.
    pub fn with_workspace<R>(
        &self,
        len: usize,
        f: impl FnOnce(&mut DeviceArray<f32>) -> Result<R>,
    ) -> Result<R> {
        let mut ws = self.workspace.try_borrow_mut().map_err(|_| {
            Error::Other("the GPU workspace is already in use (an op inside another)".into())
        })?;
        if ws.as_ref().is_none_or(|w| w.len() < len) {
            // Free the old one first: the new one may need its memory.
            *ws = None;
            *ws = Some(self.alloc::<f32>(len)?);
        }
        f(ws.as_mut().expect("allocated above"))
    }

    /// Runs `f` with this GPU's counters, at least `len` u32, all 0: zeroed when allocated
    /// or grown, and a kernel that uses them must leave them 0 (decode v07 does). Not
    /// reentrant, like the workspace.
    pub fn with_counters<R>(
        &self,
        len: usize,
        f: impl FnOnce(&mut DeviceArray<u32>) -> Result<R>,
    ) -> Result<R> {
        let mut c = self.counters.try_borrow_mut().map_err(|_| {
            Error::Other("the GPU counters are already in use (an op inside another)".into())
        })?;
        if c.as_ref().is_none_or(|c| c.len() < len) {
            *c = None;
            *c = Some(self.upload(&vec![0u32; len])?);
        }
        f(c.as_mut().expect("allocated above"))
    }

    /// The twin of `kernel`, looked up on first use.
    fn twin_function(&self, kernel: KernelId) -> Result<std::cell::Ref<'_, Function<'static>>> {
        if !self.twin_functions.borrow().contains_key(&kernel) {
            let module = self.twin_module().map_err(Error::Other)?;
            let f = module
                .get_function(ptx::twin_name(kernel.name()))
                .map_err(|_| Error::MissingKernel(ptx::twin_name(kernel.name())))?;
            self.twin_functions.borrow_mut().insert(kernel, f);
        }
        Ok(std::cell::Ref::map(self.twin_functions.borrow(), |m| {
            &m[&kernel]
        }))
    }

    /// Above 48 KiB a kernel must opt in to more dynamic shared memory (per function).
    fn opt_in_shared(&self, id: KernelId, func: &Function<'static>, bytes: u32) -> Result<()> {
        if bytes <= 48 * 1024 {
            return Ok(());
        }
        // SAFETY: a valid function handle and attribute (8 = MAX_DYNAMIC_SHARED_SIZE_BYTES).
        let code = unsafe { raw::cuFuncSetAttribute(func.to_raw().cast(), 8, bytes as i32) };
        if code != 0 {
            return Err(Error::Other(format!(
                "`{id}` asks for {bytes} bytes of shared memory, the device allows {}: {}",
                self.info.max_shared_per_block_optin,
                error_name(code)
            )));
        }
        Ok(())
    }

    /// How many clusters of `cluster` blocks of `kernel` (`block_threads` threads,
    /// `shared_bytes` of dynamic shared memory) run at once on this GPU, asked of the driver
    /// once per kernel (`cuOccupancyMaxActiveClusters`): not simply #SMs / cluster, since a
    /// cluster's blocks share one GPC and a GPC's SM count need not divide evenly.
    pub fn max_active_clusters(
        &self,
        kernel: KernelId,
        cluster: u32,
        block_threads: u32,
        shared_bytes: u32,
    ) -> Result<u32> {
        if let Some(&n) = self.active_clusters.borrow().get(&kernel) {
            return Ok(n);
        }
        let func = self.function(kernel)?;
        self.opt_in_shared(kernel, &func, shared_bytes)?;
        // SAFETY: a live function of this Gpu's module, opted in to `shared_bytes`.
        let n = unsafe {
            crate::cuda12::max_active_clusters(
                func.to_raw().cast(),
                cluster,
                block_threads,
                shared_bytes,
            )
        }?;
        self.active_clusters.borrow_mut().insert(kernel, n);
        Ok(n)
    }

    /// Launch `kernel` on this Gpu's stream with `args`, whose types must match the entry's
    /// parameters (a [`View`] for `*const T`, a [`ViewMut`] for `*mut T`, the scalar itself
    /// otherwise): checked at compile time. Geometry problems become `Error::Launch`, a
    /// sticky fault `Error::DeviceFault`; both name the kernel.
    ///
    /// # Safety
    /// The launch geometry and the sizes among `args` must keep every access the kernel
    /// makes inside the views passed (the safe wrappers in `ops` check this).
    pub(crate) unsafe fn launch<P, A: LaunchArgs<P>>(
        &self,
        kernel: Kernel<P>,
        cfg: LaunchConfig,
        args: A,
    ) -> Result<()> {
        let id = kernel.id();
        let func = if self.twin_mode.get() {
            self.twin_function(id)?
        } else {
            self.function(id)?
        };
        self.opt_in_shared(id, &func, cfg.shared_bytes)?;
        self.last_kernel.set(Some(id));
        let r = args.with_params(|params| {
            // SAFETY: `func` belongs to this Gpu's live module; `params` holds one pointer per
            // kernel parameter, each to a value of the parameter's size (checked by the types
            // of `Kernel<P>` and `A`), alive for the call; the rest is the caller's contract.
            unsafe {
                self.stream
                    .launch(&func, cfg.grid, cfg.block, cfg.shared_bytes, params)
            }
        });
        r.map_err(|source| launch_error(id, source))
    }

    /// [`Gpu::launch`] as clusters of `cluster` consecutive blocks in x, the size chosen at
    /// launch (`cuLaunchKernelEx`), for entries that read it from `%cluster_nctarank` rather
    /// than carry one in the PTX. A grid that is not whole clusters is refused before launch.
    ///
    /// # Safety
    /// As [`Gpu::launch`].
    pub(crate) unsafe fn launch_cluster<P, A: LaunchArgs<P>>(
        &self,
        kernel: Kernel<P>,
        cfg: LaunchConfig,
        cluster: u32,
        args: A,
    ) -> Result<()> {
        let id = kernel.id();
        if cluster == 0 || !cfg.grid.0.is_multiple_of(cluster) {
            return Err(Error::Other(format!(
                "kernel `{}`: a grid of {} blocks in x is not whole clusters of {cluster}",
                id.name(),
                cfg.grid.0
            )));
        }
        let func = if self.twin_mode.get() {
            self.twin_function(id)?
        } else {
            self.function(id)?
        };
        self.opt_in_shared(id, &func, cfg.shared_bytes)?;
        self.last_kernel.set(Some(id));
        let code = args.with_params(|params| {
            // SAFETY: as in `launch` (a live function and stream of this Gpu, one pointer per
            // parameter, alive for the call); whole clusters checked above.
            unsafe {
                crate::cuda12::launch_with_cluster(
                    func.to_raw().cast(),
                    self.stream.as_inner().cast(),
                    cfg.grid,
                    cfg.block,
                    cfg.shared_bytes,
                    cluster,
                    params,
                )
            }
        })?;
        match code {
            0 => Ok(()),
            _ => Err(launch_error(id, crate::error::cuda_error(code))),
        }
    }

    /// How many blocks of `kernel` fit on one SM at `block_threads` threads and `shared`
    /// bytes of dynamic shared memory (the occupancy calculator).
    pub fn blocks_per_sm(
        &self,
        kernel: impl Into<KernelId>,
        block_threads: u32,
        shared: usize,
    ) -> Result<u32> {
        let kernel = kernel.into();
        self.available(kernel)?;
        let func = self
            .module
            .get_function(kernel.name())
            .map_err(|_| Error::MissingKernel(kernel.name().into()))?;
        func.max_active_blocks_per_multiprocessor(block_threads.into(), shared)
            .cuda("cuOccupancyMaxActiveBlocksPerMultiprocessor")
    }

    /// Registers per thread and local (spill) bytes of `kernel`, as the driver compiled it.
    pub fn kernel_resources(&self, kernel: impl Into<KernelId>) -> Result<(i32, i32)> {
        use cust::function::FunctionAttribute;
        let kernel = kernel.into();
        self.available(kernel)?;
        let func = self
            .module
            .get_function(kernel.name())
            .map_err(|_| Error::MissingKernel(kernel.name().into()))?;
        Ok((
            func.get_attribute(FunctionAttribute::NumRegisters)
                .cuda("cuFuncGetAttribute")?,
            func.get_attribute(FunctionAttribute::LocalSizeBytes)
                .cuda("cuFuncGetAttribute")?,
        ))
    }

    /// Wait for the stream. A fault inside a kernel surfaces here, named after the last launch.
    pub fn sync(&self) -> Result<()> {
        self.stream
            .synchronize()
            .map_err(|source| self.fault(source, "cuStreamSynchronize"))
    }

    fn fault(&self, source: CudaError, call: &'static str) -> Error {
        if is_sticky(source) {
            Error::DeviceFault {
                kernel: self
                    .last_kernel
                    .get()
                    .map_or_else(|| "(none launched)".into(), |k| k.name().into()),
                source,
            }
        } else {
            Error::Cuda { call, source }
        }
    }

    /// Time `reps` calls of `launch(i)` (after `warmup` untimed ones), each bracketed by its
    /// own pair of CUDA events on this stream. Returns microseconds per call.
    pub fn time(
        &self,
        warmup: usize,
        reps: usize,
        mut launch: impl FnMut(usize) -> Result<()>,
    ) -> Result<Vec<f64>> {
        for i in 0..warmup {
            launch(i)?;
        }
        self.sync()?;
        let events = (0..=reps)
            .map(|_| Event::new(EventFlags::DEFAULT).cuda("cuEventCreate"))
            .collect::<Result<Vec<_>>>()?;
        // Back-to-back: event i+1 ends call i and starts call i+1, so no gap is unmeasured
        // and no launch waits on the host.
        events[0].record(&self.stream).cuda("cuEventRecord")?;
        for i in 0..reps {
            launch(warmup + i)?;
            events[i + 1].record(&self.stream).cuda("cuEventRecord")?;
        }
        self.sync()?;
        (0..reps)
            .map(|i| {
                events[i + 1]
                    .elapsed_time_f32(&events[i])
                    .map(|ms| ms as f64 * 1e3)
                    .map_err(|s| self.fault(s, "cuEventElapsedTime"))
            })
            .collect()
    }
}

/// Unloads the module explicitly before the context goes (field order would do it too; this
/// keeps it obvious).
impl Drop for Gpu {
    fn drop(&mut self) {
        let _ = self.stream.synchronize();
        self.functions.get_mut().clear();
        self.twin_functions.get_mut().clear();
        self.tensor_maps.get_mut().clear();
        *self.workspace.get_mut() = None;
        if let Some(Ok(twins)) = self.twins.take() {
            // SAFETY: leaked from a Box in `twin_module`; its functions are gone.
            drop(unsafe { Box::from_raw(twins as *const Module as *mut Module) });
        }
        // SAFETY: `module` was leaked from a Box in `with_ordinal`, and the only borrows of
        // it (the cached functions) are gone; the context (dropped after this) outlives it.
        drop(unsafe { Box::from_raw(self.module as *const Module as *mut Module) });
    }
}

/// Whether the built PTX for `arch` has the entry `name`.
fn ptx_has_entry(arch: &str, name: &str) -> bool {
    ptx::built()
        .iter()
        .any(|(a, p)| *a == arch && ptx::has_entry(p, name))
}

/// Load a PTX module into the current context, turning a refusal into an error that says
/// why (the driver's code, its JIT log, and what to do). `driver` is the driver's CUDA
/// version (1000 * major + 10 * minor). Public for the fault tests.
pub fn load_module(arch: &str, ptx_text: &str, driver: i32) -> Result<Module> {
    if let Ok(m) = Module::from_ptx(ptx_text, &[]) {
        return Ok(m);
    }
    // Load again through the raw call to get the exact code and the JIT's own log.
    let c = CString::new(ptx_text).map_err(|_| Error::Other("PTX contains a NUL byte".into()))?;
    let mut log = vec![0u8; 8192];
    // CU_JIT_ERROR_LOG_BUFFER = 5, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6.
    let mut opts = [5i32, 6i32];
    let mut vals = [log.as_mut_ptr() as *mut c_void, log.len() as *mut c_void];
    let mut m = std::ptr::null_mut();
    // SAFETY: options and values arrays have matching lengths; the log buffer outlives the call.
    let code = unsafe {
        raw::cuModuleLoadDataEx(
            &mut m,
            c.as_ptr().cast(),
            2,
            opts.as_mut_ptr(),
            vals.as_mut_ptr(),
        )
    };
    if code == 0 {
        // SAFETY: we just loaded it; unload the duplicate.
        unsafe { raw::cuModuleUnload(m) };
        return Module::from_ptx(ptx_text, &[]).map_err(|s| Error::Cuda {
            call: "cuModuleLoadData",
            source: s,
        });
    }
    let jit_log = String::from_utf8_lossy(&log[..log.iter().position(|&b| b == 0).unwrap_or(0)])
        .trim()
        .to_string();
    let isa = ptx::isa_version(ptx_text);
    let needs_newer = ptx::cuda_version_for_isa(isa).is_none_or(|need| need > driver);
    let hint = match code {
        _ if code == 222 || needs_newer => format!(
            "The driver (CUDA {}) is older than PTX ISA {isa} needs (CUDA {}): update the NVIDIA driver",
            ptx::format_cuda_version(driver),
            ptx::cuda_version_for_isa(isa).map(ptx::format_cuda_version).unwrap_or("?".into())
        ),
        218 | 200 => "The PTX is malformed for this driver's JIT; rebuild with `cargo xtask test` and report it".into(),
        209 => "No code in the module fits this GPU".into(),
        _ => "See the JIT log".into(),
    };
    Err(Error::PtxLoad {
        arch: arch.into(),
        code: error_name(code),
        hint: if jit_log.is_empty() {
            hint
        } else {
            format!("{hint}. JIT log: {jit_log}")
        },
    })
}

/// One kernel a case launches, with the block size and dynamic shared memory it is launched
/// with at the case's shape: what `explain` turns into occupancy, and how a row finds its
/// kernels' registers (by value, not by name).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KernelUse {
    pub kernel: KernelId,
    pub block_threads: u32,
    pub shared_bytes: u32,
}

impl KernelUse {
    pub fn new(kernel: impl Into<KernelId>, block_threads: u32, shared_bytes: u32) -> KernelUse {
        KernelUse {
            kernel: kernel.into(),
            block_threads,
            shared_bytes,
        }
    }
}

/// A failed launch of `id`: `Error::DeviceFault` when the context is gone (a sticky error,
/// from this or an earlier kernel), `Error::Launch` otherwise (geometry, resources).
fn launch_error(id: KernelId, source: CudaError) -> Error {
    let kernel = id.name().into();
    if is_sticky(source) {
        Error::DeviceFault { kernel, source }
    } else {
        Error::Launch { kernel, source }
    }
}

/// Grid, block and dynamic shared memory of one launch.
#[derive(Clone, Copy, Debug)]
pub struct LaunchConfig {
    pub grid: (u32, u32, u32),
    pub block: (u32, u32, u32),
    pub shared_bytes: u32,
}

impl LaunchConfig {
    /// Enough `block_threads`-wide blocks for `threads` threads in x. Refused when the grid
    /// would pass CUDA's 2^31-1 limit on gridDim.x.
    pub fn for_threads(op: &str, threads: u64, block_threads: u32) -> Result<LaunchConfig> {
        let blocks = threads.div_ceil(block_threads as u64).max(1);
        if blocks > i32::MAX as u64 {
            return Err(Error::TooLarge {
                op: op.into(),
                what: "blocks in x".into(),
                value: blocks,
                limit: i32::MAX as u64,
            });
        }
        Ok(LaunchConfig {
            grid: (blocks as u32, 1, 1),
            block: (block_threads, 1, 1),
            shared_bytes: 0,
        })
    }

    /// One block of `block_threads` per row, `rows` rows (row-wise kernels: softmax, norms).
    pub fn one_block_per_row(rows: usize, block_threads: u32, shared_bytes: u32) -> LaunchConfig {
        LaunchConfig {
            grid: (rows as u32, 1, 1),
            block: (block_threads, 1, 1),
            shared_bytes,
        }
    }

    pub fn grid_2d(grid: (u32, u32), block: (u32, u32), shared_bytes: u32) -> LaunchConfig {
        LaunchConfig {
            grid: (grid.0, grid.1, 1),
            block: (block.0, block.1, 1),
            shared_bytes,
        }
    }
}

/// A host value that can stand for a kernel parameter of device type `D`: a [`View`] for
/// `*const T`, a [`ViewMut`] for `*mut T`, the same scalar for a scalar. Its bits go into one
/// 8-byte slot (the driver reads the parameter's own size from the slot's start: x86_64 and
/// the GPU are little-endian).
pub trait Param<D> {
    fn bits(&self) -> u64;
}

impl<T> Param<*const T> for View<'_, T> {
    fn bits(&self) -> u64 {
        self.addr
    }
}
impl<T> Param<*mut T> for ViewMut<'_, T> {
    fn bits(&self) -> u64 {
        self.addr
    }
}
/// An optional array for a kernel that takes a null pointer to mean "none" (`None` passes 0).
impl<T> Param<*const T> for Option<View<'_, T>> {
    fn bits(&self) -> u64 {
        self.as_ref().map_or(0, |v| v.addr)
    }
}
impl<T> Param<*mut T> for Option<ViewMut<'_, T>> {
    fn bits(&self) -> u64 {
        self.as_ref().map_or(0, |v| v.addr)
    }
}
macro_rules! scalar_params {
    ($($t:ty => |$v:ident| $e:expr),*) => {
        $(impl Param<$t> for $t {
            fn bits(&self) -> u64 {
                let $v = *self;
                $e
            }
        })*
    };
}
scalar_params!(
    u32 => |v| v as u64,
    i32 => |v| v as u32 as u64,
    u64 => |v| v,
    f32 => |v| v.to_bits() as u64,
    u16 => |v| v as u64
);

/// The arguments of one launch: a tuple of [`Param`]s matching the kernel's parameter tuple
/// `P` element by element.
pub trait LaunchArgs<P> {
    /// Calls `f` with the `void**` array `cuLaunchKernel` takes.
    fn with_params<R>(&self, f: impl FnOnce(&[*mut c_void]) -> R) -> R;
}

macro_rules! launch_args {
    ($n:literal; $($h:ident $d:ident $i:tt),+) => {
        impl<$($d,)+ $($h: Param<$d>,)+> LaunchArgs<($($d,)+)> for ($($h,)+) {
            fn with_params<R>(&self, f: impl FnOnce(&[*mut c_void]) -> R) -> R {
                let mut slots: [u64; $n] = [$(self.$i.bits()),+];
                let base = slots.as_mut_ptr();
                // One pointer per slot; `slots` outlives the call.
                let params: [*mut c_void; $n] = std::array::from_fn(|i| base.wrapping_add(i).cast());
                f(&params)
            }
        }
    };
}
launch_args!(1; H0 D0 0);
launch_args!(2; H0 D0 0, H1 D1 1);
launch_args!(3; H0 D0 0, H1 D1 1, H2 D2 2);
launch_args!(4; H0 D0 0, H1 D1 1, H2 D2 2, H3 D3 3);
launch_args!(5; H0 D0 0, H1 D1 1, H2 D2 2, H3 D3 3, H4 D4 4);
launch_args!(6; H0 D0 0, H1 D1 1, H2 D2 2, H3 D3 3, H4 D4 4, H5 D5 5);
launch_args!(7; H0 D0 0, H1 D1 1, H2 D2 2, H3 D3 3, H4 D4 4, H5 D5 5, H6 D6 6);
launch_args!(8; H0 D0 0, H1 D1 1, H2 D2 2, H3 D3 3, H4 D4 4, H5 D5 5, H6 D6 6, H7 D7 7);
launch_args!(9; H0 D0 0, H1 D1 1, H2 D2 2, H3 D3 3, H4 D4 4, H5 D5 5, H6 D6 6, H7 D7 7, H8 D8 8);
launch_args!(10; H0 D0 0, H1 D1 1, H2 D2 2, H3 D3 3, H4 D4 4, H5 D5 5, H6 D6 6, H7 D7 7, H8 D8 8, H9 D9 9);
launch_args!(11; H0 D0 0, H1 D1 1, H2 D2 2, H3 D3 3, H4 D4 4, H5 D5 5, H6 D6 6, H7 D7 7, H8 D8 8, H9 D9 9, H10 D10 10);
launch_args!(12; H0 D0 0, H1 D1 1, H2 D2 2, H3 D3 3, H4 D4 4, H5 D5 5, H6 D6 6, H7 D7 7, H8 D8 8, H9 D9 9, H10 D10 10, H11 D11 11);
launch_args!(13; H0 D0 0, H1 D1 1, H2 D2 2, H3 D3 3, H4 D4 4, H5 D5 5, H6 D6 6, H7 D7 7, H8 D8 8, H9 D9 9, H10 D10 10, H11 D11 11, H12 D12 12);
launch_args!(14; H0 D0 0, H1 D1 1, H2 D2 2, H3 D3 3, H4 D4 4, H5 D5 5, H6 D6 6, H7 D7 7, H8 D8 8, H9 D9 9, H10 D10 10, H11 D11 11, H12 D12 12, H13 D13 13);
launch_args!(15; H0 D0 0, H1 D1 1, H2 D2 2, H3 D3 3, H4 D4 4, H5 D5 5, H6 D6 6, H7 D7 7, H8 D8 8, H9 D9 9, H10 D10 10, H11 D11 11, H12 D12 12, H13 D13 13, H14 D14 14);
launch_args!(16; H0 D0 0, H1 D1 1, H2 D2 2, H3 D3 3, H4 D4 4, H5 D5 5, H6 D6 6, H7 D7 7, H8 D8 8, H9 D9 9, H10 D10 10, H11 D11 11, H12 D12 12, H13 D13 13, H14 D14 14, H15 D15 15);
launch_args!(17; H0 D0 0, H1 D1 1, H2 D2 2, H3 D3 3, H4 D4 4, H5 D5 5, H6 D6 6, H7 D7 7, H8 D8 8, H9 D9 9, H10 D10 10, H11 D11 11, H12 D12 12, H13 D13 13, H14 D14 14, H15 D15 15, H16 D16 16);
launch_args!(18; H0 D0 0, H1 D1 1, H2 D2 2, H3 D3 3, H4 D4 4, H5 D5 5, H6 D6 6, H7 D7 7, H8 D8 8, H9 D9 9, H10 D10 10, H11 D11 11, H12 D12 12, H13 D13 13, H14 D14 14, H15 D15 15, H16 D16 16, H17 D17 17);
launch_args!(19; H0 D0 0, H1 D1 1, H2 D2 2, H3 D3 3, H4 D4 4, H5 D5 5, H6 D6 6, H7 D7 7, H8 D8 8, H9 D9 9, H10 D10 10, H11 D11 11, H12 D12 12, H13 D13 13, H14 D14 14, H15 D15 15, H16 D16 16, H17 D17 17, H18 D18 18);

/// An empty parameter list.
impl LaunchArgs<()> for () {
    fn with_params<R>(&self, f: impl FnOnce(&[*mut c_void]) -> R) -> R {
        f(&[])
    }
}

/// An owned device array. Kernels see it through [`View`]s (read) and [`ViewMut`]s (write),
/// which carry a device address and a length and borrow the array.
pub struct DeviceArray<T: DeviceCopy> {
    buf: Option<DeviceBuffer<T>>,
    len: usize,
}

impl<T: DeviceCopy> DeviceArray<T> {
    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    fn addr(&self) -> u64 {
        self.buf
            .as_ref()
            .map(|b| b.as_device_ptr().as_raw())
            .unwrap_or(0)
    }
    fn check_range(&self, r: &Range<usize>) {
        assert!(
            r.start <= r.end && r.end <= self.len,
            "range {r:?} outside a device array of {}",
            self.len
        );
    }
    pub fn view(&self) -> View<'_, T> {
        self.view_range(0..self.len)
    }
    pub fn view_mut(&mut self) -> ViewMut<'_, T> {
        self.view_range_mut(0..self.len)
    }
    /// Panics if `r` is outside the array (a bug in the caller, like slice indexing).
    pub fn view_range(&self, r: Range<usize>) -> View<'_, T> {
        self.check_range(&r);
        View {
            addr: self.addr() + (r.start * size_of::<T>()) as u64,
            len: r.len(),
            _p: PhantomData,
        }
    }
    pub fn view_range_mut(&mut self, r: Range<usize>) -> ViewMut<'_, T> {
        self.check_range(&r);
        ViewMut {
            addr: self.addr() + (r.start * size_of::<T>()) as u64,
            len: r.len(),
            _p: PhantomData,
        }
    }
    pub fn copy_from_host(&mut self, data: &[T]) -> Result<()> {
        if data.len() != self.len {
            return Err(Error::Shape {
                op: "upload".into(),
                what: format!(
                    "{} host elements into a device array of {}",
                    data.len(),
                    self.len
                ),
            });
        }
        match &mut self.buf {
            Some(b) => b.copy_from(data).cuda("cuMemcpyHtoD"),
            None => Ok(()),
        }
    }
    /// Synchronous download (waits for all prior work on the context).
    pub fn to_host(&self) -> Result<Vec<T>>
    where
        T: Default + Clone,
    {
        let mut v = vec![T::default(); self.len];
        if let Some(b) = &self.buf {
            cust::context::CurrentContext::synchronize().map_err(|source| Error::Cuda {
                call: "cuCtxSynchronize",
                source,
            })?;
            b.copy_to(&mut v[..]).cuda("cuMemcpyDtoH")?;
        }
        Ok(v)
    }
}

/// A read-only window on a device array. Made only by [`DeviceArray::view`] and
/// [`DeviceArray::view_range`] (or narrowed by [`View::range`]): its address and length
/// always lie inside a live allocation, which is what makes the safe launch wrappers sound.
///
/// ```compile_fail,E0616
/// // A view cannot be lengthened past its allocation: its fields are private.
/// fn grow(v: &mut rooflab::gpu::View<'_, f32>) { v.len += 1; }
/// ```
#[derive(Clone, Copy)]
pub struct View<'a, T> {
    addr: u64,
    len: usize,
    _p: PhantomData<&'a T>,
}

/// A writable window on a device array (see [`View`]).
///
/// ```compile_fail,E0616
/// fn grow(v: &mut rooflab::gpu::ViewMut<'_, f32>) { v.len = usize::MAX; }
/// ```
pub struct ViewMut<'a, T> {
    addr: u64,
    len: usize,
    _p: PhantomData<&'a mut T>,
}

fn check_sub_range(r: &Range<usize>, len: usize) {
    assert!(
        r.start <= r.end && r.end <= len,
        "range {r:?} outside a view of {len} elements"
    );
}

impl<'a, T> View<'a, T> {
    /// Elements in the window.
    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// The device address of the first element (for peers such as cuBLAS, and the launch).
    pub fn device_addr(&self) -> u64 {
        self.addr
    }
    /// The sub-window `r` of this window. Panics if `r` is outside it (like slice indexing).
    pub fn range(self, r: Range<usize>) -> View<'a, T> {
        check_sub_range(&r, self.len);
        View {
            addr: self.addr + (r.start * size_of::<T>()) as u64,
            len: r.len(),
            _p: PhantomData,
        }
    }
}

impl<'a, T> ViewMut<'a, T> {
    /// Elements in the window.
    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// The device address of the first element (for peers such as cuBLAS, and the launch).
    pub fn device_addr(&self) -> u64 {
        self.addr
    }
    /// The window split in two at `mid`: `[0, mid)` and `[mid, len)`, both writable (they do
    /// not overlap). Panics if `mid > len`.
    pub fn split_at(self, mid: usize) -> (ViewMut<'a, T>, ViewMut<'a, T>) {
        check_sub_range(&(0..mid), self.len);
        (
            ViewMut {
                addr: self.addr,
                len: mid,
                _p: PhantomData,
            },
            ViewMut {
                addr: self.addr + (mid * size_of::<T>()) as u64,
                len: self.len - mid,
                _p: PhantomData,
            },
        )
    }
    /// This window, read-only from now on (a pass's output becoming the next pass's input).
    pub fn into_view(self) -> View<'a, T> {
        View {
            addr: self.addr,
            len: self.len,
            _p: PhantomData,
        }
    }
    /// The same window, read-only, for as long as this borrow lasts.
    pub fn as_view(&self) -> View<'_, T> {
        View {
            addr: self.addr,
            len: self.len,
            _p: PhantomData,
        }
    }
    /// The sub-window `r` of this window. Panics if `r` is outside it.
    pub fn range(self, r: Range<usize>) -> ViewMut<'a, T> {
        check_sub_range(&r, self.len);
        ViewMut {
            addr: self.addr + (r.start * size_of::<T>()) as u64,
            len: r.len(),
            _p: PhantomData,
        }
    }
    /// Re-borrow (to pass the same output to several launches).
    pub fn reborrow(&mut self) -> ViewMut<'_, T> {
        ViewMut {
            addr: self.addr,
            len: self.len,
            _p: PhantomData,
        }
    }
}

#[cfg(test)]
mod unit_tests {
    use super::*;

    /// An array of `len` f32 with no device memory behind it: views' bookkeeping only.
    fn array(len: usize) -> DeviceArray<f32> {
        DeviceArray { buf: None, len }
    }

    fn panics(f: impl FnOnce() + std::panic::UnwindSafe) -> bool {
        std::panic::catch_unwind(f).is_err()
    }

    #[test]
    fn views_cannot_outgrow_their_allocation() {
        let mut a = array(10);
        assert_eq!(a.view().len(), 10);
        let v = a.view_range(2..7);
        assert_eq!((v.len(), v.device_addr()), (5, 8));
        // Narrowing stays inside; widening or running past the end panics.
        assert_eq!(v.range(1..5).len(), 4);
        assert!(panics(|| {
            let a = array(10);
            let _ = a.view_range(2..7).range(0..6);
        }));
        assert!(panics(|| {
            let a = array(10);
            let _ = a.view_range(0..11);
        }));
        let (lo, hi) = a.view_mut().split_at(4);
        assert_eq!((lo.len(), hi.len(), hi.device_addr()), (4, 6, 16));
        assert!(panics(|| {
            let mut a = array(3);
            let _ = a.view_mut().split_at(4);
        }));
        let w = a.view_range_mut(5..10).range(1..3);
        assert_eq!((w.len(), w.device_addr()), (2, 24));
        assert_eq!(w.into_view().len(), 2);
    }

    #[test]
    fn launch_arguments_are_laid_out_one_slot_each() {
        let a = array(4);
        let args = (a.view(), 7u32, -1.5f32, u64::MAX);
        let bits: Vec<u64> = args.with_params(|p| {
            p.iter()
                // SAFETY: each pointer is to one live u64 slot of `with_params`.
                .map(|&q| unsafe { *(q as *const u64) })
                .collect()
        });
        assert_eq!(bits, vec![0, 7, (-1.5f32).to_bits() as u64, u64::MAX]);
        let none: Option<View<'_, f32>> = None;
        assert_eq!((none,).with_params(|p| p.len()), 1);
        assert_eq!(
            Param::<*const f32>::bits(&Some(a.view_range(1..2))),
            4,
            "Some(view) passes its address, None null"
        );
    }
}
