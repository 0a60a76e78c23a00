//! Family `reduce` (being written).
