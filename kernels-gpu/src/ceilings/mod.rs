//! Family `ceilings` (being written).
