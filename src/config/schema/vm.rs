//! `[[vm]]` and `[host.virt]`: virtual machines in front of the device and
//! the CPU work virtualization adds to the I/O path.

use super::*;
use serde::{Deserialize, Serialize};

/// `[host.virt]`: CPU work of the virtio-blk path under KVM and QEMU, in
/// cycles (converted with the host's `clock_ghz`). The guest kernel's own
/// block-layer steps (syscall, bio, blk-mq insert, completion) cost what the
/// host's `[host.costs]` say: the guest runs the same Linux code on the same
/// cores. What is here is what virtualization adds.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct VirtCosts {
    /// The guest's virtqueue notify (a write to the device's notify register):
    /// VM exit, KVM's fast-MMIO ioeventfd lookup and eventfd signal, VM entry.
    pub vmexit_notify_cycles: u64,
    /// Delivering one virtual interrupt to a running vCPU without posted
    /// interrupts (Sandy Bridge has no APICv): the kick IPI's exit, injection
    /// on entry, and the guest's EOI exit.
    pub interrupt_inject_cycles: u64,
    /// The IOThread's signal of the guest's irqfd (eventfd write, KVM's irq routing).
    pub irqfd_signal_cycles: u64,
    /// QEMU, per request taken from a virtqueue: virtqueue_pop (descriptor
    /// walk, guest-memory mapping), virtio_blk_handle_request, building the
    /// Linux AIO iocb.
    pub virtqueue_pop_cycles: u64,
    /// QEMU, per completed request: reading the AIO completion from the
    /// ring, virtio_blk_req_complete and virtqueue_push (status byte, unmap,
    /// used-ring entry).
    pub virtio_complete_cycles: u64,
    /// Guest virtio-blk queue_rq outside the virtqueue lock (command header,
    /// scatterlist).
    pub guest_queue_rq_cycles: u64,
    /// Guest time holding the virtqueue lock per request added (descriptor
    /// writes, avail ring, kick_prepare) and per used entry taken in the
    /// interrupt handler.
    pub vq_lock_hold_cycles: u64,
    /// Cache lines of a split virtqueue written by both sides on every
    /// request (avail index and ring by the guest and read by QEMU; used
    /// index and ring the other way): they move between the vCPU's core and
    /// the IOThread's core.
    pub vring_shared_lines: u32,
}

impl VirtCosts {
    /// Every cost 0 to 1e9 cycles, shared lines 0 to 64.
    pub fn check(&self, t: &Check) -> Result<(), String> {
        let v = self;
        for (key, x) in [
            ("vmexit_notify_cycles", v.vmexit_notify_cycles),
            ("interrupt_inject_cycles", v.interrupt_inject_cycles),
            ("irqfd_signal_cycles", v.irqfd_signal_cycles),
            ("virtqueue_pop_cycles", v.virtqueue_pop_cycles),
            ("virtio_complete_cycles", v.virtio_complete_cycles),
            ("guest_queue_rq_cycles", v.guest_queue_rq_cycles),
            ("vq_lock_hold_cycles", v.vq_lock_hold_cycles),
        ] {
            t.int(key, x, 0, MAX_CYCLES, "at most 1e9 cycles")?;
        }
        t.int(
            "vring_shared_lines",
            v.vring_shared_lines,
            0,
            MAX_SHARED_LINES,
            "cache lines",
        )
    }
}

impl Default for VirtCosts {
    fn default() -> Self {
        VirtCosts {
            // ESTIMATE: a VM exit + entry costs "hundreds or thousands of cycles"
            // (Intel, "Virtualization and Performance: Understanding VM
            // Exits", 2009); an exit that reaches KVM's ioeventfd and signals
            // an eventfd measured ~2,500 cycles end to end as an ioctl round
            // trip on a 2020 AMD host (LKML, "KVM: SVM: use vmsave/vmload for
            // saving/restoring additional host state" thread). 2,500.
            vmexit_notify_cycles: 2500,
            // ESTIMATE: two exits (the kick IPI and the EOI write) at ~2,000
            // cycles each on hosts without posted interrupts; Gordon et al.
            // (ELI, ASPLOS 2012) show interrupt-related exits dominate the
            // overhead of virtual interrupt delivery.
            interrupt_inject_cycles: 4000,
            // ESTIMATE: a write(2) to an eventfd (~200-cycle syscall, as
            // [host.costs] syscall_ns) plus kvm_set_irq routing and an IPI
            // send to the vCPU's core: ~1,500.
            irqfd_signal_cycles: 1500,
            // ESTIMATE: QEMU's per-request emulation; the native kernel's
            // whole bio + blk-mq + nvme submit is ~3,600 cycles in
            // [host.costs] and QEMU's user-space path does comparable work
            // (descriptor walk, address translation, request and iocb setup): 3,000.
            virtqueue_pop_cycles: 3000,
            // ESTIMATE: the completion half of the same work: 2,000.
            virtio_complete_cycles: 2000,
            // ESTIMATE: virtio_blk's queue_rq outside the lock, like the nvme
            // driver's queue_rq in [host.costs] (1,000 cycles).
            guest_queue_rq_cycles: 1000,
            // ESTIMATE: the critical section is a few descriptor and ring
            // writes, like the NVMe SQ lock's 150 cycles plus kick_prepare's
            // event-index read: 300.
            vq_lock_hold_cycles: 300,
            // VIRTIO 1.1 split virtqueue (section 2.6): the driver writes the
            // available ring (idx + entry) and the device reads it; the device
            // writes the used ring (idx + entry) and the driver reads it: at
            // least one line each way per request: 2.
            vring_shared_lines: 2,
        }
    }
}

/// How a VM's virtio-blk disks give queues to the vCPUs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum VirtqueueLayout {
    /// One virtqueue per disk shared by every vCPU, behind its lock (the
    /// classic virtio-blk data plane, num-queues=1).
    Shared,
    /// One virtqueue per vCPU per disk (num-queues = vCPUs; QEMU's default since 5.2).
    #[default]
    PerVcpu,
}

/// Where the vCPU threads run on the host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum VcpuPlacement {
    /// vCPU i runs on `cpus[i]` (libvirt `<vcpupin>`).
    #[default]
    Pinned,
    /// Each vCPU may run on any of `cpus`, moved by the host scheduler model.
    Floating,
}

/// `[[vm.disk]]`: one virtio-blk disk, a region of the device's namespace.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VmDiskConfig {
    /// The guest's name for it (`vda`, `vdb`, ...); guest jobs use `filename=/dev/NAME`.
    pub name: String,
    /// Size in bytes; absent: an equal share of what the other disks leave of the namespace.
    #[serde(default)]
    pub size_bytes: Option<u64>,
}

/// `[[vm]]`: one QEMU/KVM guest.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VmConfig {
    pub name: String,
    pub vcpus: u32,
    /// Guest memory (recorded; direct I/O bypasses the guest page cache, so it does not enter the model).
    #[serde(default)]
    pub memory_bytes: u64,
    /// Host CPUs of the vCPUs: `pinned` puts vCPU i on `cpus[i]`; `floating` lets each move among them.
    pub cpus: Vec<u32>,
    #[serde(default)]
    pub vcpu_placement: VcpuPlacement,
    /// `shared` (one virtqueue per disk) or `per-vcpu`.
    #[serde(default)]
    pub queues: VirtqueueLayout,
    /// Virtqueue size: QEMU virtio-blk `queue-size` default 256 (hw/block/virtio-blk.c,
    /// since QEMU 5.0); the guest driver's tag depth per queue (virtio_blk uses the
    /// ring size when indirect descriptors are offered, as QEMU does).
    #[serde(default = "vq_size_default")]
    pub queue_size: u32,
    /// One IOThread per entry, on that host CPU; virtqueues are dealt to them
    /// round-robin (QEMU's iothread-vq-mapping with a list of IOThreads).
    pub iothread_cpus: Vec<u32>,
    /// The IOThreads' I/O priority (`none`, or ionice's CLASS[:LEVEL]: `best-effort:0`, `idle`, ...).
    #[serde(default = "ioprio_none")]
    pub iothread_ioprio: String,
    /// QEMU IOThread `poll-max-ns`: how long an idle IOThread busy-polls its
    /// queues before sleeping (IOTHREAD_POLL_MAX_NS_DEFAULT = 32768 in QEMU's iothread.c).
    #[serde(default = "poll_max_default")]
    pub poll_max_ns: u64,
    /// The guest kernel's spinlock (`queued` for any guest kernel since Linux 4.2).
    #[serde(default)]
    pub guest_spinlock: SpinlockKind,
    /// The fio job file run inside the guest (relative to the config file).
    pub job: String,
    #[serde(default, rename = "disk")]
    pub disks: Vec<VmDiskConfig>,
}

impl VmConfig {
    /// The ranges of a `[[vm]]` table's numeric keys, checked at load with
    /// the rest of the config ([`check_vm`] checks how its keys fit together).
    pub fn check_ranges(&self, t: &Check) -> Result<(), String> {
        t.int(
            "vcpus",
            self.vcpus,
            1,
            MAX_CPUS,
            "a guest's CPUs, at most the host's limit",
        )?;
        t.int(
            "queue_size",
            self.queue_size,
            1,
            32768,
            "VIRTIO 1.1 2.6: Queue Size is at most 32768",
        )?;
        t.int("poll_max_ns", self.poll_max_ns, 0, MAX_STEP_NS, "at most 1 s")?;
        t.int("cpus (entries)", self.cpus.len() as u64, 0, MAX_CPUS, "one per vCPU")?;
        t.int(
            "iothread_cpus (entries)",
            self.iothread_cpus.len() as u64,
            0,
            MAX_CPUS,
            "one per IOThread",
        )
    }
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

fn vq_size_default() -> u32 {
    256
}

fn ioprio_none() -> String {
    "none".into()
}

fn poll_max_default() -> u64 {
    32768
}
