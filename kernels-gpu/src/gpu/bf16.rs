//! bf16 storage: conversions to and from f32 and packed loads.
