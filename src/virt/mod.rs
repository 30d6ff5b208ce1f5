//! Virtual machines in front of the device: KVM guests whose virtio-blk
//! driver gives each disk one virtqueue shared by every vCPU (guarded by the
//! virtqueue's lock, Linux `drivers/block/virtio_blk.c` `virtio_queue_rq` /
//! `virtblk_done`) or one virtqueue per vCPU, and QEMU IOThreads that poll
//! their virtqueues (`util/aio-posix.c` adaptive polling, `poll-max-ns`) and
//! submit to the host block layer with Linux AIO from the host CPU they run
//! on, with their own I/O priority (QEMU 9.0's `iothread-vq-mapping` deals a
//! disk's virtqueues to several IOThreads). Notifications follow the VIRTIO
//! 1.1 split virtqueue: while the device side is processing it suppresses
//! the guest's notifies, and the guest gets one interrupt until it has
//! consumed the used ring.
//!
//! This module holds the configuration checks, the guest job files, the
//! disk layout and the run-time state; `io` moves requests through it (the
//! guest's submission, the IOThreads, the guest's interrupt). A virtio
//! request is the same host request the block layer and the device carry:
//! the VMs reach it through the host's named methods.

mod io;

use crate::config::{MachineConfig, VcpuPlacement, VirtqueueLayout};
use crate::host::block::WaitPool;
use crate::host::cpu::{Core, Lock, Placement, Topology};
use crate::sim::{Ns, Rng};
use crate::workload::fio::FioJobFile;
use crate::workload::IoPrio;
use std::collections::VecDeque;

/// The host's job file with every VM's guest jobs appended. Guest jobs are
/// renamed `VM/JOB`, get reporting groups of their own after the host's,
/// and start with the host's first group (a VM's jobs run concurrently
/// with everything else, so `stonewall` inside a VM's file is refused).
/// `load` reads a VM's `job` file (the CLI resolves it next to the config).
pub fn attach_guest_jobs(
    cfg: &MachineConfig,
    host: Option<FioJobFile>,
    load: &mut dyn FnMut(&str) -> Result<FioJobFile, String>,
) -> Result<FioJobFile, String> {
    let mut out = host.unwrap_or_else(|| FioJobFile {
        path: "<vms>".into(),
        global_options: Vec::new(),
        jobs: Vec::new(),
    });
    if out.jobs.iter().any(|j| j.vm.is_some()) {
        return Err("guest jobs are already attached".into());
    }
    let mut next_group = out.jobs.iter().map(|j| j.groupid + 1).max().unwrap_or(0);
    for (vi, vm) in cfg.vms.iter().enumerate() {
        let f = load(&vm.job).map_err(|e| format!("vm '{}': job {}: {e}", vm.name, vm.job))?;
        if f.jobs.is_empty() {
            return Err(format!("vm '{}': job file {} has no jobs", vm.name, vm.job));
        }
        let base = next_group;
        for (k, mut j) in f.jobs.into_iter().enumerate() {
            if j.stonewall && k > 0 {
                return Err(format!(
                    "vm '{}': {} line {}: job '{}' sets stonewall; a VM's jobs all run at once, \
alongside the host's (split them over several VMs or runs instead)",
                    vm.name, f.path, j.line, j.name
                ));
            }
            if j.sync_io || j.fsync_blocks > 0 || j.fdatasync_blocks > 0 {
                return Err(format!(
                    "vm '{}': {} line {}: job '{}' sets sync, fsync or fdatasync, which nvmesim models on the \
host's block device only (a guest's flushes through virtio-blk and QEMU are not modelled)",
                    vm.name, f.path, j.line, j.name
                ));
            }
            j.stonewall = false;
            // The guest file's [global] options become the job's own (the
            // merged file's globals are the host's); job options still win.
            let mut opts = f.global_options.clone();
            opts.append(&mut j.options);
            j.options = opts;
            j.vm = Some(vi as u32);
            j.name = format!("{}/{}", vm.name, j.name);
            j.groupid += base;
            next_group = next_group.max(j.groupid + 1);
            out.jobs.push(j);
        }
    }
    Ok(out)
}

/// [`crate::config::VirtCosts`] in nanoseconds of one host's clock.
#[derive(Debug, Clone, Copy)]
pub struct VirtNs {
    pub vmexit_notify_ns: Ns,
    pub interrupt_inject_ns: Ns,
    pub irqfd_signal_ns: Ns,
    pub virtqueue_pop_ns: Ns,
    pub virtio_complete_ns: Ns,
    pub guest_queue_rq_ns: Ns,
    pub vq_lock_hold_ns: Ns,
}

impl VirtNs {
    pub fn new(c: &crate::config::VirtCosts, clock_ghz: f64) -> VirtNs {
        let ns = |cycles: u64| (cycles as f64 / clock_ghz).round() as Ns;
        VirtNs {
            vmexit_notify_ns: ns(c.vmexit_notify_cycles),
            interrupt_inject_ns: ns(c.interrupt_inject_cycles),
            irqfd_signal_ns: ns(c.irqfd_signal_cycles),
            virtqueue_pop_ns: ns(c.virtqueue_pop_cycles),
            virtio_complete_ns: ns(c.virtio_complete_cycles),
            guest_queue_rq_ns: ns(c.guest_queue_rq_cycles),
            vq_lock_hold_ns: ns(c.vq_lock_hold_cycles),
        }
    }
}

/// One guest vCPU: a host thread placed on host cores.
#[derive(Debug, Clone)]
pub struct Vcpu {
    pub vm: u32,
    pub placement: Placement,
}

/// One virtqueue of one virtio-blk disk.
#[derive(Debug, Clone)]
pub struct Virtqueue {
    /// The guest driver's lock of this virtqueue (`vblk->vqs[i].lock`),
    /// taken by submitting vCPUs and by the interrupt handler.
    pub lock: Lock,
    /// The ring's shared lines (avail and used rings), written by the guest
    /// vCPUs and by the IOThread.
    pub ring: Lock,
    /// The guest blk-mq hardware context's state lines (pending bitmap, run
    /// counters): shared by the vCPUs that map to this queue.
    pub hctx_lines: Lock,
    /// The virtual disk this queue belongs to (index into `Vms::disk_stats`).
    pub disk: u32,
    /// Guest blk-mq tags = descriptors of the ring.
    pub tags: WaitPool,
    /// Requests the guest made available and the IOThread has not taken, with the time they were added.
    pub avail: VecDeque<(u32, Ns)>,
    /// Requests the IOThread has put in the used ring and the guest has not taken.
    pub used: VecDeque<(u32, Ns)>,
    pub iothread: u32,
    /// The vCPU (global index) that takes this queue's interrupt.
    pub irq_vcpu: u32,
    /// An interrupt is on its way or being handled (the guest gets no other until it has consumed the used ring).
    pub irq_pending: bool,
    /// Guest notifies (VM exits) and interrupts delivered.
    pub kicks: u64,
    pub interrupts: u64,
    pub requests: u64,
}

/// What an IOThread is doing between its runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IoThreadState {
    /// A run is scheduled (it has work, or is about to look again).
    Scheduled,
    /// Busy-polling its queues since `from` until `until`, then it sleeps.
    Polling { from: Ns, until: Ns },
    /// Asleep in ppoll; a run is scheduled to wake it (it pays a context switch).
    Waking,
    /// Asleep in io_submit for a host tag.
    WaitingTag,
}

/// One QEMU IOThread.
#[derive(Debug, Clone)]
pub struct IoThread {
    pub cpu: u32,
    pub prio: IoPrio,
    pub vqs: Vec<u32>,
    pub state: IoThreadState,
    /// QEMU `poll-max-ns` of this IOThread.
    pub poll_max_ns: Ns,
    /// Host AIO completions waiting to be processed, with their time.
    pub completed: VecDeque<(u32, Ns)>,
    /// A request that waits for a host tag (the rest of its batch waits behind it).
    pub tag_req: Option<u32>,
    pub busy_ns: Ns,
    pub poll_ns: Ns,
    pub wakeups: u64,
    pub submitted: u64,
    pub completions: u64,
    pub batches: u64,
}

impl IoThread {
    /// Account the polling that ended at `t` (it found work then, or gave up at `until`).
    pub fn end_polling(&mut self, t: Ns) {
        if let IoThreadState::Polling { from, until } = self.state {
            self.poll_ns += t.min(until).saturating_sub(from);
        }
    }
}

/// A VM's layout at run time.
#[derive(Debug, Clone)]
pub struct VmRuntime {
    pub name: String,
    pub first_vcpu: u32,
    pub vcpus: u32,
    pub layout: VirtqueueLayout,
    /// Per disk: (name, base, length, virtqueues).
    pub disks: Vec<(String, u64, u64, Vec<u32>)>,
    pub iothreads: Vec<u32>,
}

/// Everything the VMs add to the machine.
#[derive(Debug, Clone)]
pub struct Vms {
    pub vms: Vec<VmRuntime>,
    pub vcpus: Vec<Vcpu>,
    pub vqs: Vec<Virtqueue>,
    pub iothreads: Vec<IoThread>,
    /// Each virtual disk's statistics lines in the guest kernel (in-flight
    /// counter and reference, `[host.costs] disk_stats_shared_lines`), in
    /// disk order; empty when the kernel keeps them per CPU.
    pub disk_stats: Vec<Lock>,
    /// The virtualization costs in this host's nanoseconds.
    pub(super) ns: VirtNs,
    scratch: Vec<u32>,
}

impl Vms {
    /// Build the VMs of `cfg` on `topo`: vCPUs placed, virtqueues per disk
    /// (one, or one per vCPU), IOThreads on their CPUs with the virtqueues
    /// dealt to them round-robin across the VM's disks.
    pub fn build(
        cfg: &MachineConfig,
        topo: &Topology,
        cores: &mut [Core],
        namespace: u64,
        seed: u64,
    ) -> Result<Vms, String> {
        let mut out = Vms {
            vms: Vec::new(),
            vcpus: Vec::new(),
            vqs: Vec::new(),
            iothreads: Vec::new(),
            disk_stats: Vec::new(),
            ns: VirtNs::new(&cfg.host.virt, cfg.host.clock_ghz),
            scratch: Vec::new(),
        };
        let disks = crate::workload::files::disk_layout(&cfg.vms, namespace)?;
        let nr = topo.nr_cpus();
        let hctx_lines = cfg.host.costs.hctx_shared_lines;
        let disk_stats_lines = cfg.host.costs.disk_stats_shared_lines;
        let ring_lines = cfg.host.virt.vring_shared_lines;
        for (vi, vm) in cfg.vms.iter().enumerate() {
            crate::config::check_vm(vm).map_err(|e| format!("vm '{}': {e}", vm.name))?;
            for &c in vm.cpus.iter().chain(&vm.iothread_cpus) {
                if c >= nr {
                    return Err(format!(
                        "vm '{}': host CPU {c} does not exist (host '{}' has CPUs 0-{})",
                        vm.name,
                        cfg.host.name,
                        nr - 1
                    ));
                }
            }
            let first_vcpu = out.vcpus.len() as u32;
            for v in 0..vm.vcpus {
                let allowed = match vm.vcpu_placement {
                    VcpuPlacement::Pinned => vec![vm.cpus[v as usize]],
                    VcpuPlacement::Floating => vm.cpus.clone(),
                };
                let placement = Placement::new(
                    allowed,
                    cores,
                    Rng::new(seed, &format!("vcpu:{}", vm.name), v as u64),
                    cfg.host.scheduler.migration_interval_ns.max(1),
                );
                out.vcpus.push(Vcpu {
                    vm: vi as u32,
                    placement,
                });
            }
            let prio = IoPrio::parse(&vm.iothread_ioprio).map_err(|e| format!("vm '{}': {e}", vm.name))?;
            let first_iot = out.iothreads.len() as u32;
            for &cpu in &vm.iothread_cpus {
                out.iothreads.push(IoThread {
                    cpu,
                    prio,
                    vqs: Vec::new(),
                    state: IoThreadState::Polling { from: 0, until: 0 },
                    poll_max_ns: vm.poll_max_ns,
                    completed: VecDeque::new(),
                    tag_req: None,
                    busy_ns: 0,
                    poll_ns: 0,
                    wakeups: 0,
                    submitted: 0,
                    completions: 0,
                    batches: 0,
                });
            }
            let n_iot = vm.iothread_cpus.len() as u32;
            let nq = match vm.queues {
                VirtqueueLayout::Shared => 1,
                VirtqueueLayout::PerVcpu => vm.vcpus,
            };
            let mut dealt = 0u32;
            let mut rt_disks = Vec::new();
            for (name, base, len) in &disks[vi] {
                let mut ids = Vec::new();
                let disk = out.disk_stats.len() as u32;
                if disk_stats_lines > 0 {
                    out.disk_stats.push(Lock::lines(
                        format!("vm {} {name} guest disk stats lines", vm.name),
                        disk_stats_lines,
                    ));
                }
                for q in 0..nq {
                    let id = out.vqs.len() as u32;
                    let iot = first_iot + dealt % n_iot;
                    dealt += 1;
                    out.iothreads[iot as usize].vqs.push(id);
                    let spin = vm.guest_spinlock;
                    out.vqs.push(Virtqueue {
                        lock: Lock::with(format!("vm {} {name} virtqueue {q} lock", vm.name), spin, 0),
                        ring: Lock::lines(format!("vm {} {name} virtqueue {q} ring lines", vm.name), ring_lines),
                        hctx_lines: Lock::lines(format!("vm {} {name} guest hctx{q} state lines", vm.name), hctx_lines),
                        disk,
                        tags: WaitPool::new(vm.queue_size),
                        avail: VecDeque::new(),
                        used: VecDeque::new(),
                        iothread: iot,
                        // Linux spreads a multi-queue virtio device's vectors
                        // over the CPUs (queue q's interrupt on vCPU q); a
                        // single queue's goes to the first vCPU.
                        irq_vcpu: first_vcpu + q % vm.vcpus,
                        irq_pending: false,
                        kicks: 0,
                        interrupts: 0,
                        requests: 0,
                    });
                    ids.push(id);
                }
                rt_disks.push((name.clone(), *base, *len, ids));
            }
            out.vms.push(VmRuntime {
                name: vm.name.clone(),
                first_vcpu,
                vcpus: vm.vcpus,
                layout: vm.queues,
                disks: rt_disks,
                iothreads: (first_iot..first_iot + n_iot).collect(),
            });
        }
        Ok(out)
    }

    /// The virtqueue a request from guest vCPU `vcpu` (global index) to `disk` goes to.
    pub fn queue_for(&self, vm: u32, disk: u32, vcpu: u32) -> u32 {
        let rt = &self.vms[vm as usize];
        let qs = &rt.disks[disk as usize].3;
        qs[((vcpu - rt.first_vcpu) as usize) % qs.len()]
    }
}
