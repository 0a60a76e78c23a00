//! One error type for the whole host side. Each message names what was wrong and what to do.

use cust::error::CudaError;

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(
        "no CUDA device: cuInit reported {0}. rooflab needs an NVIDIA GPU with its driver \
         loaded (`nvidia-smi` should list it); GPU work was not done"
    )]
    NoDevice(String),

    #[error(
        "the CUDA driver failed to start: cuInit reported {code}. {hint}. GPU work was not \
         done (this is not \"no GPU here\": the machine has a driver that does not work)"
    )]
    DriverBroken { code: String, hint: String },

    #[error(
        "the NVIDIA driver is too old: it supports CUDA {have}, rooflab's PTX (ISA {isa}) needs a \
         driver for CUDA {need} or newer. Update the driver"
    )]
    DriverTooOld {
        have: String,
        need: String,
        isa: String,
    },

    #[error(
        "no PTX fits this GPU: {device} has compute capability {cc}, the oldest PTX built is \
         for {oldest}. Add an older sm_XX to host/build/ptx_arches.txt and rebuild"
    )]
    NoPtxForDevice {
        device: String,
        cc: String,
        oldest: String,
    },

    #[error("the driver refused rooflab's {arch} PTX: {code}. {hint}")]
    PtxLoad {
        arch: String,
        code: String,
        hint: String,
    },

    #[error(
        "kernel `{0}` is not in the loaded PTX; rebuild (cargo xtask test) so host and PTX match"
    )]
    MissingKernel(String),

    #[error(
        "`{kernel}` is unavailable on {device}: it is built only into the {needs} PTX \
         (Hopper-only instructions: wgmma, TMA, setmaxnreg), which runs on compute capability \
         9.0 alone; this GPU loaded the {loaded} PTX. Use an earlier step of the family"
    )]
    Unavailable {
        kernel: String,
        needs: String,
        device: String,
        loaded: String,
    },

    #[error("bad input for {op}: {what}")]
    Shape { op: String, what: String },

    #[error(
        "{op}: {what} = {value} is past the kernel's limit of {limit}; split the work or use a \
         variant with 64-bit indexing"
    )]
    TooLarge {
        op: String,
        what: String,
        value: u64,
        limit: u64,
    },

    #[error(
        "out of device memory: asked for {requested} bytes ({requested_gib:.2} GiB) with \
         {free} bytes free of {total}. Use a smaller --size or free the GPU"
    )]
    OutOfMemory {
        requested: u64,
        requested_gib: f64,
        free: u64,
        total: u64,
    },

    #[error("launching `{kernel}` failed: {source}. Check grid/block sizes and shared memory")]
    Launch { kernel: String, source: CudaError },

    #[error(
        "kernel `{kernel}` faulted on the device: {source}. The CUDA context is now unusable; \
         the process must exit (re-run the single test with compute-sanitizer to locate it)"
    )]
    DeviceFault { kernel: String, source: CudaError },

    #[error("CUDA call `{call}` failed: {source}")]
    Cuda {
        call: &'static str,
        source: CudaError,
    },

    #[error("{0}")]
    Mismatch(String),

    #[error("{0}")]
    Other(String),
}

impl Error {
    /// True when the error leaves the CUDA context unusable (sticky errors): a caller must
    /// stop using this `Gpu`.
    pub fn is_fatal(&self) -> bool {
        matches!(self, Error::DeviceFault { .. })
    }
}

/// `.cuda("cuXxx")?` turns a cust error into `Error::Cuda` naming the call.
pub trait CudaResultExt<T> {
    fn cuda(self, call: &'static str) -> Result<T>;
}

impl<T> CudaResultExt<T> for cust::error::CudaResult<T> {
    fn cuda(self, call: &'static str) -> Result<T> {
        self.map_err(|source| Error::Cuda { call, source })
    }
}

/// Errors after which the context is dead (CUDA's "sticky" errors).
pub fn is_sticky(e: CudaError) -> bool {
    use CudaError::*;
    matches!(
        e,
        IllegalAddress
            | LaunchFailed
            | IllegalInstruction
            | MisalignedAddress
            | InvalidAddressSpace
            | InvalidProgramCounter
            | HardwareStackError
            | AssertError
            | LaunchTimeout
            | UnknownError
    )
}

/// The cust error for a raw driver code (from a call cust does not wrap, see `cuda12`):
/// cust's `CudaError` carries the driver's codes as its discriminants; a code it does not
/// know is `UnknownError`.
pub fn cuda_error(code: i32) -> CudaError {
    use CudaError::*;
    const KNOWN: [CudaError; 57] = [
        InvalidValue,
        OutOfMemory,
        NotInitialized,
        Deinitialized,
        ProfilerDisabled,
        ProfilerNotInitialized,
        ProfilerAlreadyStarted,
        ProfilerAlreadyStopped,
        NoDevice,
        InvalidDevice,
        InvalidImage,
        InvalidContext,
        ContextAlreadyCurrent,
        MapFailed,
        UnmapFailed,
        ArrayIsMapped,
        AlreadyMapped,
        NoBinaryForGpu,
        AlreadyAcquired,
        NotMapped,
        NotMappedAsArray,
        NotMappedAsPointer,
        EccUncorrectable,
        UnsupportedLimit,
        ContextAlreadyInUse,
        PeerAccessUnsupported,
        InvalidPtx,
        InvalidGraphicsContext,
        NvlinkUncorrectable,
        InvalidSource,
        FileNotFound,
        SharedObjectSymbolNotFound,
        SharedObjectInitFailed,
        OperatingSystemError,
        InvalidHandle,
        NotFound,
        NotReady,
        IllegalAddress,
        LaunchOutOfResources,
        LaunchTimeout,
        LaunchIncompatibleTexturing,
        PeerAccessAlreadyEnabled,
        PeerAccessNotEnabled,
        PrimaryContextActive,
        ContextIsDestroyed,
        AssertError,
        TooManyPeers,
        HostMemoryAlreadyRegistered,
        HostMemoryNotRegistered,
        HardwareStackError,
        IllegalInstruction,
        MisalignedAddress,
        InvalidAddressSpace,
        InvalidProgramCounter,
        LaunchFailed,
        NotPermitted,
        NotSupported,
    ];
    KNOWN
        .into_iter()
        .find(|&e| e as u32 as i64 == code as i64)
        .unwrap_or(UnknownError)
}

/// What to do about a failing `cuInit`, by its code.
pub fn init_hint(code: i32) -> &'static str {
    match code {
        803 | 804 => {
            "The user-mode driver (libcuda) and the kernel module disagree: reinstall \
                      the driver or reboot after an update"
        }
        46 => {
            "The devices are busy or unavailable (exclusive-process mode, or taken by \
               another process): free them or pick another with ROOFLAB_DEVICE"
        }
        304 => {
            "The driver could not reach the GPU (device nodes /dev/nvidia*, permissions, \
                a container without the GPU passed in)"
        }
        999 => "An unknown driver error: check `nvidia-smi` and the kernel log (dmesg)",
        _ => "Check that `nvidia-smi` works, then the driver installation",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_say_what_to_do() {
        let e = Error::NoPtxForDevice {
            device: "Tesla T4".into(),
            cc: "7.5".into(),
            oldest: "sm_80".into(),
        };
        let m = e.to_string();
        assert!(
            m.contains("7.5") && m.contains("sm_80") && m.contains("ptx_arches.txt"),
            "{m}"
        );
        let e = Error::DriverTooOld {
            have: "11.4".into(),
            need: "11.8".into(),
            isa: "7.8".into(),
        };
        assert!(e.to_string().contains("Update the driver"));
        // A driver that is there but fails is not "no device": its code and what to do.
        let e = Error::DriverBroken {
            code: "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH (803)".into(),
            hint: init_hint(803).into(),
        };
        let m = e.to_string();
        assert!(
            m.contains("803") && m.contains("reinstall") && m.contains("not \"no GPU here\""),
            "{m}"
        );
        assert!(init_hint(304).contains("/dev/nvidia"));
        let e = Error::OutOfMemory {
            requested: 10,
            requested_gib: 0.0,
            free: 5,
            total: 8,
        };
        assert!(e.to_string().contains("smaller --size"));
        let e = Error::DeviceFault {
            kernel: "k".into(),
            source: CudaError::IllegalAddress,
        };
        assert!(e.is_fatal() && e.to_string().contains("`k`"));
        assert!(is_sticky(CudaError::LaunchFailed) && !is_sticky(CudaError::InvalidValue));
        // Raw driver codes (cuda.h) back to cust's errors.
        assert_eq!(cuda_error(1), CudaError::InvalidValue);
        assert_eq!(cuda_error(700), CudaError::IllegalAddress);
        assert_eq!(cuda_error(701), CudaError::LaunchOutOfResources);
        assert_eq!(cuda_error(719), CudaError::LaunchFailed);
        assert_eq!(cuda_error(12345), CudaError::UnknownError);
    }
}
