//! Family `norm` (being written).
