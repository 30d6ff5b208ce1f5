//! Per-job I/O stream generation (offsets, sizes, directions, pacing), as fio does it.
