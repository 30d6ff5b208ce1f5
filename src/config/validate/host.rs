//! The range checks of `[host]` and its tables, and of each `[[vm]]` table.

use super::*;

pub(super) fn host(c: &Check, h: &HostConfig) -> Result<(), String> {
    let why = "logical CPUs are at most 1024, fio's CPU limit";
    c.int("host", "sockets", h.sockets.into(), 1, MAX_CPUS, why)?;
    c.int("host", "cores_per_socket", h.cores_per_socket.into(), 1, MAX_CPUS, why)?;
    c.int("host", "threads_per_core", h.threads_per_core.into(), 1, MAX_CPUS, why)?;
    let cpus = u64::from(h.sockets)
        .checked_mul(h.cores_per_socket.into())
        .and_then(|x| x.checked_mul(h.threads_per_core.into()));
    match cpus {
        Some(n) if n <= MAX_CPUS => {}
        _ => {
            return Err(c.err(
                "host",
                format!(
                    "sockets x cores_per_socket x threads_per_core = {} x {} x {} logical CPUs: at most {MAX_CPUS} \
(fio's CPU limit, FIO_MAX_CPUS)",
                    h.sockets, h.cores_per_socket, h.threads_per_core
                ),
            ))
        }
    }
    c.float("host", "clock_ghz", h.clock_ghz, 0.1, 10.0, "a CPU clock in GHz")?;
    if let Some(m) = &h.socket_hops {
        let n = h.sockets as usize;
        if m.len() != n || m.iter().any(|r| r.len() != n) {
            return Err(c.err(
                "host",
                format!("socket_hops must be {n} rows of {n} numbers (one per socket)"),
            ));
        }
        for (i, r) in m.iter().enumerate() {
            for &x in r {
                c.int(
                    "host",
                    &format!("socket_hops row {}", i + 1),
                    x.into(),
                    0,
                    8,
                    "interconnect links",
                )?;
            }
        }
    }
    let k = &h.costs;
    let t = "host.costs";
    for (key, v) in [
        ("syscall_ns", k.syscall_ns),
        ("bio_setup_ns", k.bio_setup_ns),
        ("blk_mq_insert_ns", k.blk_mq_insert_ns),
        ("sw_queue_lock_hold_ns", k.sw_queue_lock_hold_ns),
        ("nvme_queue_rq_ns", k.nvme_queue_rq_ns),
        ("sq_lock_hold_ns", k.sq_lock_hold_ns),
        ("doorbell_mmio_ns", k.doorbell_mmio_ns),
        ("irq_entry_ns", k.irq_entry_ns),
        ("cqe_handle_ns", k.cqe_handle_ns),
        ("bio_complete_ns", k.bio_complete_ns),
        ("reap_syscall_ns", k.reap_syscall_ns),
        ("reap_per_io_ns", k.reap_per_io_ns),
        ("app_per_io_ns", k.app_per_io_ns),
        ("context_switch_ns", k.context_switch_ns),
        ("cacheline_same_socket_ns", k.cacheline_same_socket_ns),
        ("cacheline_cross_socket_ns", k.cacheline_cross_socket_ns),
        ("cacheline_two_hop_ns", k.cacheline_two_hop_ns.unwrap_or(0)),
        ("rq_insert_hold_ns", k.rq_insert_hold_ns),
        ("rq_dispatch_hold_ns", k.rq_dispatch_hold_ns),
        ("rq_complete_hold_ns", k.rq_complete_hold_ns),
        ("softirq_complete_ns", k.softirq_complete_ns),
        ("null_queue_rq_ns", k.null_queue_rq_ns),
        ("ipi_ns", k.ipi_ns),
        ("hmb_fill_ns", k.hmb_fill_ns),
        ("fsync_path_ns", k.fsync_path_ns),
        ("flush_request_ns", k.flush_request_ns),
    ] {
        c.int(t, key, v, 0, MAX_STEP_NS, "a CPU cost of at most 1 s")?;
    }
    for (key, v) in [
        ("queue_lock_shared_lines", k.queue_lock_shared_lines),
        ("hctx_shared_lines", k.hctx_shared_lines),
        ("disk_stats_shared_lines", k.disk_stats_shared_lines),
    ] {
        c.int(t, key, v.into(), 0, MAX_SHARED_LINES, "cache lines")?;
    }
    c.int(
        t,
        "memcpy_bytes_per_s",
        k.memcpy_bytes_per_s,
        1_000_000,
        MAX_BYTES_PER_S,
        "1 MB/s to 1 TB/s",
    )?;
    let s = &h.scheduler;
    c.int(
        "host.scheduler",
        "migration_interval_ns",
        s.migration_interval_ns,
        0,
        3_600 * 1_000_000_000,
        "at most an hour",
    )?;
    c.float(
        "host.scheduler",
        "migration_probability",
        s.migration_probability,
        0.0,
        1.0,
        "a probability",
    )?;
    let v = &h.virt;
    for (key, x) in [
        ("vmexit_notify_cycles", v.vmexit_notify_cycles),
        ("interrupt_inject_cycles", v.interrupt_inject_cycles),
        ("irqfd_signal_cycles", v.irqfd_signal_cycles),
        ("virtqueue_pop_cycles", v.virtqueue_pop_cycles),
        ("virtio_complete_cycles", v.virtio_complete_cycles),
        ("guest_queue_rq_cycles", v.guest_queue_rq_cycles),
        ("vq_lock_hold_cycles", v.vq_lock_hold_cycles),
    ] {
        c.int("host.virt", key, x, 0, MAX_CYCLES, "at most 1e9 cycles")?;
    }
    c.int(
        "host.virt",
        "vring_shared_lines",
        v.vring_shared_lines.into(),
        0,
        MAX_SHARED_LINES,
        "cache lines",
    )?;
    let n = &h.numa;
    let last = u64::from(h.sockets) - 1;
    if let Some(d) = n.device_node {
        c.int("host.numa", "device_node", d.into(), 0, last, "a socket of this host")?;
        if n.queue_memory_node.is_some() {
            return Err(c.err(
                "host.numa",
                "queue_memory_node must be absent when device_node is set (the driver allocates the \
SQ/CQ rings on the drive's node)"
                    .into(),
            ));
        }
    }
    if let Some(m) = n.queue_memory_node {
        c.int(
            "host.numa",
            "queue_memory_node",
            m.into(),
            0,
            last,
            "a socket of this host",
        )?;
    }
    for (key, x) in [
        ("remote_memory_ns", n.remote_memory_ns),
        ("remote_mmio_ns", n.remote_mmio_ns),
        ("remote_dma_read_ns", n.remote_dma_read_ns),
        ("remote_dma_write_ns", n.remote_dma_write_ns),
        ("remote_interrupt_ns", n.remote_interrupt_ns),
    ] {
        c.int("host.numa", key, x, 0, MAX_STEP_NS, "at most 1 s")?;
    }
    let ci = &h.cpuidle;
    if ci.exit_latency_ns.len() != ci.target_residency_ns.len() || ci.exit_latency_ns.len() > 10 {
        return Err(c.err(
            "host.cpuidle",
            format!(
                "exit_latency_ns has {} states and target_residency_ns {}: give each state both, at most 10",
                ci.exit_latency_ns.len(),
                ci.target_residency_ns.len()
            ),
        ));
    }
    for (key, v, max) in [
        ("exit_latency_ns", &ci.exit_latency_ns, 10_000_000),
        ("target_residency_ns", &ci.target_residency_ns, 100_000_000),
    ] {
        for &x in v {
            c.int("host.cpuidle", key, x, 0, max, "ns")?;
        }
        if v.windows(2).any(|w| w[1] < w[0]) {
            return Err(c.err(
                "host.cpuidle",
                format!("{key} must not decrease: states are listed shallowest first"),
            ));
        }
    }
    c.int(
        "host.cpuidle",
        "iowait_multiplier",
        ci.iowait_multiplier.into(),
        0,
        1000,
        "",
    )?;
    Ok(())
}

/// Checks of one `[[vm]]` table that need no machine (the CPU numbers are
/// checked against the host when the machine is built).
pub fn check_vm(vm: &crate::config::VmConfig) -> Result<(), String> {
    if vm.vcpus == 0 {
        return Err("vcpus must be at least 1".into());
    }
    if vm.cpus.is_empty() {
        return Err("cpus must name the host CPUs the vCPUs run on".into());
    }
    if vm.vcpu_placement == crate::config::VcpuPlacement::Pinned && vm.cpus.len() < vm.vcpus as usize {
        return Err(format!(
            "{} vCPUs pinned but cpus names {} host CPUs (one per vCPU needed)",
            vm.vcpus,
            vm.cpus.len()
        ));
    }
    if vm.iothread_cpus.is_empty() {
        return Err("iothread_cpus must name at least one host CPU (one IOThread each)".into());
    }
    // VIRTIO 1.1 2.6: a split virtqueue's size is a power of 2, at most 32768.
    if !vm.queue_size.is_power_of_two() || vm.queue_size > 32768 || vm.queue_size < 2 {
        return Err(format!(
            "queue_size = {}: a split virtqueue's size is a power of 2 from 2 to 32768",
            vm.queue_size
        ));
    }
    crate::sim::IoPrio::parse(&vm.iothread_ioprio).map_err(|e| format!("iothread_ioprio: {e}"))?;
    let mut names: Vec<&str> = Vec::new();
    for d in &vm.disks {
        if names.contains(&d.name.as_str()) {
            return Err(format!("two disks named '{}'", d.name));
        }
        if d.size_bytes == Some(0) {
            return Err(format!("disk '{}': size_bytes must be positive", d.name));
        }
        names.push(&d.name);
    }
    Ok(())
}
