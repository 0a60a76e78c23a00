//! Family `transpose` (being written).
