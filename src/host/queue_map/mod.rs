//! Queue maps: the policy that decides which hardware queue (blk-mq hctx, and
//! with it which NVMe submission queue) a request goes to. This is where the
//! schemes under study differ; `per-core` is Linux's stock mapping.
//!
//! A policy is a trait so new ones drop in; the hot path never calls it: the
//! machine asks the policy once per (cpu, direction, priority class, size
//! class) at setup and keeps the answers in a flat table ([`QueueMapTable`]).
//! docs/extending.md walks through adding one (`read-size-split`).

mod per_core;
mod size_split;
mod split;
mod wrr;
pub use crate::config::parse_ratio;
pub use per_core::{spread_cpus, PerCore};
pub use size_split::ReadSizeSplit;
pub use split::DirectionSplit;
pub use wrr::{qprio_of_class, WrrAffinity, WrrIoprio};

use crate::host::cpu::Topology;
use crate::nvme::arbitration::QPrio;
use crate::workload::{Ddir, Io, IoPrio};

pub trait QueueMap {
    /// Name as written in configs (`per-core`, ...).
    fn name(&self) -> &'static str;
    /// Hardware queues (hctx = NVMe I/O queue pairs) the policy uses.
    fn nr_hw_queues(&self) -> u32;
    /// The hardware queue for a request issued on `cpu`.
    fn hw_queue(&self, cpu: u32, ddir: Ddir, prio: IoPrio) -> u32;
    /// Requests (bios, before any split) of at least this many bytes are
    /// *large*: [`Self::hw_queue_large`] picks their queue. `None` (the
    /// stock case): the size does not matter.
    fn large_bytes(&self) -> Option<u32> {
        None
    }
    /// The hardware queue for a large request issued on `cpu`.
    fn hw_queue_large(&self, cpu: u32, ddir: Ddir, prio: IoPrio) -> u32 {
        self.hw_queue(cpu, ddir, prio)
    }
    /// CPUs whose software queues feed hardware queue `q` (its interrupt goes to the first).
    fn cpus_of(&self, q: u32) -> &[u32];
    /// The software queue (blk-mq ctx, with its lock) a request from `cpu`
    /// is inserted into. Linux: the submitting CPU's own.
    fn sw_queue(&self, cpu: u32, _ddir: Ddir, _prio: IoPrio) -> u32 {
        cpu
    }
    /// Number of software queues.
    fn nr_sw_queues(&self, nr_cpus: u32) -> u32 {
        nr_cpus
    }
    /// The QPRIO the driver creates SQ `q` with. Stock Linux leaves the
    /// field zero, i.e. urgent (drivers/nvme/host/pci.c adapter_alloc_sq);
    /// only weighted arbitration looks at it.
    fn sq_prio(&self, _q: u32) -> QPrio {
        QPrio::Urgent
    }
    /// The completion queue SQ `q` posts to (Linux: each SQ has its own).
    fn cq_of(&self, q: u32) -> u32 {
        q
    }
}

/// The `[device.queue_map]` settings a policy may read.
#[derive(Debug, Clone, Default)]
pub struct MapParams {
    /// rw-isolation: read:write queue ratio.
    pub read_write_ratio: Option<(u32, u32)>,
    /// linux-read-queues: queues of the default (write) map.
    pub write_queues: Option<u32>,
    /// wrr-ioprio: submission queues per core (default 4: urgent, high, medium, low).
    pub sq_per_core: Option<u32>,
    /// read-size-split: reads of at least this many bytes go to their own queues.
    pub large_read_bytes: Option<u32>,
}

/// A policy built for a host and a device queue limit, or why it cannot be.
pub type Built = Result<Box<dyn QueueMap>, String>;

/// A queue-map policy as `[device.queue_map] policy` and `--queue-map` name it.
pub struct Policy {
    /// The name written in configs and on the command line.
    pub name: &'static str,
    /// One line for `--help` and the docs.
    pub help: &'static str,
    /// The policy for a host and a device queue limit, from its settings.
    pub build: fn(&Topology, u32, &MapParams) -> Built,
}

/// Every policy: the one list `build`, `--queue-map`'s values and help, and
/// the error for an unknown name come from. A new policy is its file plus
/// one entry here.
pub const POLICIES: &[Policy] = &[
    Policy {
        name: "per-core",
        help: "Linux's stock map: the submitting CPU's queue (blk_mq_map_queues)",
        build: |topo, max, _| Ok(Box::new(PerCore::new(topo, max))),
    },
    Policy {
        name: "rw-isolation",
        help: "reads and writes on separate groups of queues, read_write_ratio R:W (default 3:1)",
        // The isolation study's default split: three read queues per write queue.
        build: |topo, max, p| {
            Ok(or_stock(
                DirectionSplit::rw_isolation(topo, max, p.read_write_ratio.unwrap_or((3, 1))),
                topo,
                max,
            ))
        },
    },
    Policy {
        name: "linux-read-queues",
        help: "the nvme driver's read queues: write_queues = N for the default map, the rest read",
        // Upstream's write_queues defaults to 0 (no split); a split needs a count.
        build: |topo, max, p| match p.write_queues {
            Some(w) if w > 0 => Ok(or_stock(DirectionSplit::linux_read_queues(topo, max, w), topo, max)),
            _ => Err(
                "queue map 'linux-read-queues' needs [device.queue_map] write_queues = N (N >= 1), \
as the nvme driver's write_queues parameter"
                    .into(),
            ),
        },
    },
    Policy {
        name: "wrr-ioprio",
        help: "sq_per_core SQs per core (default 4: urgent, high, medium, low), picked by the I/O's ionice class",
        build: |topo, max, p| {
            // The HotStorage '17 design: four SQs per core, one per priority.
            let k = p.sq_per_core.unwrap_or(4);
            if !(1..=4).contains(&k) {
                return Err(format!(
                    "queue map 'wrr-ioprio': sq_per_core = {k}, expected 1 to 4 (one SQ per priority: urgent, high, medium, low)"
                ));
            }
            Ok(or_stock(WrrIoprio::new(topo, max, k), topo, max))
        },
    },
    Policy {
        name: "wrr-affinity",
        help: "one SQ per core, priorities dealt to the cores in turn (the SPDK way)",
        build: |topo, max, _| Ok(Box::new(WrrAffinity::new(topo, max))),
    },
    Policy {
        name: "read-size-split",
        help: "reads of at least large_read_bytes on SQs of their own, one per NUMA node",
        // No default size: the split is only meaningful at a size the user chose.
        build: |topo, max, p| {
            let Some(bytes) = p.large_read_bytes else {
                return Err(
                    "queue map 'read-size-split' needs [device.queue_map] large_read_bytes = N (reads of at least N bytes get their own SQs)"
                        .into(),
                );
            };
            Ok(or_stock(ReadSizeSplit::new(topo, max, bytes), topo, max))
        },
    },
];

/// A policy that cannot split the device's queues uses the stock map.
fn or_stock<M: QueueMap + 'static>(m: Option<M>, topo: &Topology, max: u32) -> Box<dyn QueueMap> {
    match m {
        Some(m) => Box::new(m),
        None => Box::new(PerCore::new(topo, max)),
    }
}

/// The names of every policy, for messages: "per-core, rw-isolation, ...".
pub fn policy_names() -> String {
    POLICIES.iter().map(|p| p.name).collect::<Vec<_>>().join(", ")
}

/// Build the policy named `name` for a host and a device queue limit.
pub fn build(name: &str, topo: &Topology, device_max_queues: u32, params: &MapParams) -> Built {
    match POLICIES.iter().find(|p| p.name == name) {
        Some(p) => (p.build)(topo, device_max_queues, params),
        None => Err(format!("unknown queue map '{name}' (available: {})", policy_names())),
    }
}

/// A flattened policy: `hw_queue` answers by table lookup.
#[derive(Debug, Clone)]
pub struct QueueMapTable {
    pub name: &'static str,
    pub nr_hw_queues: u32,
    /// Index: (cpu * 3 + ddir) * 4 + prio class.
    table: Vec<u32>,
    /// Requests of at least this many bytes look up `large_table` (same
    /// indexing); `u64::MAX` (no policy asks for sizes): never.
    large_from: u64,
    large_table: Vec<u32>,
    /// Software queue per (cpu, ddir, class), same indexing as `table`.
    sw_table: Vec<u32>,
    pub nr_sw_queues: u32,
    /// Interrupt CPU of each hardware queue.
    pub irq_cpu: Vec<u32>,
    pub cpus: Vec<Vec<u32>>,
    /// QPRIO of each SQ.
    pub sq_prio: Vec<QPrio>,
    /// Completion queue of each SQ (an index of an SQ whose queue pair holds it).
    pub cq_of: Vec<u32>,
    /// The NVMe driver's poll queue of each CPU (the HCTX_TYPE_POLL map);
    /// empty without poll queues (`[host] poll_queues = 0`).
    pub poll_of: Vec<u32>,
}

impl QueueMapTable {
    pub fn from_policy(p: &dyn QueueMap, topo: &Topology) -> Self {
        let nr = topo.nr_cpus();
        let mut table = Vec::with_capacity((nr * 12) as usize);
        let mut sw_table = Vec::with_capacity((nr * 12) as usize);
        let mut large_table = Vec::new();
        for cpu in 0..nr {
            for ddir in [Ddir::Read, Ddir::Write, Ddir::Trim] {
                for class in 0..4u8 {
                    let prio = IoPrio { class, level: 0 };
                    table.push(p.hw_queue(cpu, ddir, prio));
                    sw_table.push(p.sw_queue(cpu, ddir, prio));
                    if p.large_bytes().is_some() {
                        large_table.push(p.hw_queue_large(cpu, ddir, prio));
                    }
                }
            }
        }
        let cpus: Vec<Vec<u32>> = (0..p.nr_hw_queues()).map(|q| p.cpus_of(q).to_vec()).collect();
        QueueMapTable {
            name: p.name(),
            nr_hw_queues: p.nr_hw_queues(),
            table,
            large_from: p.large_bytes().map_or(u64::MAX, u64::from),
            large_table,
            sw_table,
            nr_sw_queues: p.nr_sw_queues(nr),
            irq_cpu: cpus.iter().map(|c| c.first().copied().unwrap_or(0)).collect(),
            cpus,
            sq_prio: (0..p.nr_hw_queues()).map(|q| p.sq_prio(q)).collect(),
            cq_of: (0..p.nr_hw_queues()).map(|q| p.cq_of(q)).collect(),
            poll_of: Vec::new(),
        }
    }

    /// Add `n` poll queues (queue pairs with no interrupt vector) after the
    /// others, and spread the CPUs over them in contiguous groups, as
    /// blk_mq_map_queues spreads a map's CPUs (the nvme driver's
    /// HCTX_TYPE_POLL map, nvme_pci_map_queues). Each is created with the
    /// stock QPRIO (urgent, the field left zero) and its own CQ.
    pub fn add_poll_queues(&mut self, n: u32, nr_cpus: u32) {
        let first = self.nr_hw_queues;
        self.poll_of = (0..nr_cpus)
            .map(|c| first + (u64::from(c) * u64::from(n) / u64::from(nr_cpus)) as u32)
            .collect();
        for q in first..first + n {
            let cpus: Vec<u32> = (0..nr_cpus).filter(|&c| self.poll_of[c as usize] == q).collect();
            self.irq_cpu.push(cpus.first().copied().unwrap_or(0));
            self.cpus.push(cpus);
            self.sq_prio.push(QPrio::Urgent);
            self.cq_of.push(q);
        }
        self.nr_hw_queues += n;
    }

    /// Whether hardware queue `q` is a poll queue (it raises no interrupt).
    #[inline]
    pub fn is_poll_queue(&self, q: u32) -> bool {
        self.poll_of.first().is_some_and(|&first| q >= first)
    }

    /// The poll queue of a polled bio submitted on `cpu`, if there are any.
    #[inline]
    pub fn for_polled(&self, cpu: u32) -> Option<u32> {
        self.poll_of.get(cpu as usize).copied()
    }

    /// Add one hardware queue that every request of I/O priority `class`
    /// goes to, from any CPU (a dedicated high-priority SQ, created urgent,
    /// its interrupt on CPU 0). Returns its index.
    pub fn add_dedicated(&mut self, class: u8, nr_cpus: u32) -> u32 {
        let q = self.nr_hw_queues;
        for cpu in 0..nr_cpus as usize {
            for ddir in 0..3 {
                let i = ((cpu * 3 + ddir) << 2) + (class as usize & 3);
                self.table[i] = q;
                if let Some(l) = self.large_table.get_mut(i) {
                    *l = q;
                }
            }
        }
        self.nr_hw_queues += 1;
        self.irq_cpu.push(0);
        self.cpus.push((0..nr_cpus).collect());
        self.sq_prio.push(QPrio::Urgent);
        self.cq_of.push(q);
        q
    }

    /// The hardware queue of a request of `len` bytes (the bio's, before
    /// any split: a split bio's parts follow it).
    #[inline]
    pub fn hw_queue(&self, cpu: u32, ddir: Ddir, prio: IoPrio, len: u32) -> u32 {
        let i = ((cpu as usize * 3 + ddir as usize) << 2) + (prio.class as usize & 3);
        if u64::from(len) >= self.large_from {
            self.large_table[i]
        } else {
            self.table[i]
        }
    }

    /// The hardware queue of bio `io` submitted on `cpu`: the one place
    /// that reads an I/O's properties for the map (a host thread's bio, a
    /// VM's request submitted by its IOThread, fio's batched loop).
    #[inline]
    pub fn for_io(&self, cpu: u32, io: &Io) -> u32 {
        self.hw_queue(cpu, io.ddir, io.prio, io.len)
    }

    /// The hardware queue of a flush (a write of no data) submitted on `cpu`.
    #[inline]
    pub fn for_flush(&self, cpu: u32, prio: IoPrio) -> u32 {
        self.hw_queue(cpu, Ddir::Write, prio, 0)
    }

    #[inline]
    pub fn sw_queue(&self, cpu: u32, ddir: Ddir, prio: IoPrio) -> u32 {
        self.sw_table[((cpu as usize * 3 + ddir as usize) << 2) + (prio.class as usize & 3)]
    }
}

/// The queue map of `cfg`'s device on `topo`: the policy (`policy`, else
/// `[device.queue_map] policy`) over the queues the device and the block
/// layer allow, plus the urgent path's dedicated SQ if configured.
pub fn for_device(
    cfg: &crate::config::MachineConfig,
    topo: &Topology,
    policy: Option<&str>,
) -> Result<QueueMapTable, String> {
    use crate::config::{BlockLayerKind, UrgentPath};
    let nr_cpus = topo.nr_cpus();
    let mut max_q = cfg.device.nvme.max_io_queues;
    if cfg.device.hw_queues > 0 {
        max_q = max_q.min(cfg.device.hw_queues);
    }
    if cfg.device.block_layer == BlockLayerKind::SingleQueue {
        // One request queue feeds one driver queue.
        max_q = 1;
    }
    let qm = &cfg.device.queue_map;
    let policy_name = policy.unwrap_or(qm.policy.as_str());
    let params = MapParams {
        read_write_ratio: match &qm.read_write_ratio {
            Some(r) => Some(parse_ratio(r).map_err(|e| format!("[device.queue_map] {e}"))?),
            None => None,
        },
        write_queues: qm.write_queues,
        sq_per_core: qm.sq_per_core,
        large_read_bytes: qm.large_read_bytes,
    };
    // The dedicated-SQ urgent path keeps one of the device's queues for itself.
    let dedicated = cfg.device.hmb.size_bytes > 0 && cfg.device.hmb.path == UrgentPath::DedicatedSq;
    if dedicated && cfg.device.hmb.urgent_max_level.is_some() {
        return Err(format!(
            "device '{}': [device.hmb] urgent_max_level needs path = \"admin-queue\" \
(the dedicated SQ is chosen by the queue map, which sees the priority class only)",
            cfg.device.name
        ));
    }
    let map_q = if dedicated {
        max_q.saturating_sub(1).max(1)
    } else {
        max_q
    };
    // The driver's poll queues come out of the device's I/O queues, leaving
    // at least one with an interrupt (nvme_setup_irqs: min(poll_queues,
    // nr_io_queues - 1)). The legacy request queue has no polled map, and
    // null_blk's own poll queues are not modelled (it completes at once).
    let poll = if cfg.device.block_layer == BlockLayerKind::BlkMq && cfg.device.kind != crate::config::DeviceKind::Null
    {
        cfg.host.poll_queues.min(map_q - 1)
    } else {
        0
    };
    let policy = build(policy_name, topo, map_q - poll, &params)?;
    let mut map = QueueMapTable::from_policy(policy.as_ref(), topo);
    if dedicated {
        map.add_dedicated(cfg.device.hmb.urgent_class, nr_cpus);
    }
    if poll > 0 {
        map.add_poll_queues(poll, nr_cpus);
    }
    Ok(map)
}
