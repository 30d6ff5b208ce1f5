//! Page-level flash translation layer.
