//! Family `softmax` (being written).
