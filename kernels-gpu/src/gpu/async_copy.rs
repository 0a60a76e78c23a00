//! Asynchronous global-to-shared copies (`cp.async`, sm_80 and newer).
