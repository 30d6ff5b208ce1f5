//! The events every layer schedules. `Event` is the one interface between
//! layers: each variant is a moment at which one layer hands work to the
//! next (a doorbell write reaching the controller, a die finishing an
//! operation, an interrupt reaching a CPU). It lives at the bottom so that
//! each layer can schedule the next without importing the machine above it.

/// The one event queue all layers schedule on.
pub type Queue = super::EventQueue<Event>;

/// Everything that can happen, dispatched by `match` in `machine::Machine::run`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// A fio thread gets the CPU (to reap, submit, or finish).
    ThreadRun { thread: u32 },
    /// A thread polling for completions reaches its next trace request's time.
    ThreadTimer { thread: u32 },
    /// An SQ tail doorbell write reached the controller, covering `n` new SQEs.
    SqDoorbell { sq: u32, n: u32 },
    /// The controller's fetch engine is free to arbitrate again.
    FetchEngine,
    /// Fetched SQEs arrived in the controller.
    SqesArrived { sq: u32, n: u32 },
    /// Firmware has decoded a command; it may start if its SQ lets it.
    CmdReady { cmd: u32 },
    /// A write command's data has arrived in the device's buffer.
    WriteDataIn { cmd: u32 },
    /// A die finished the array phase of a read (data in its page register).
    DieArrayDone { die: u32 },
    /// A die finished its current operation.
    DieOpDone { die: u32 },
    /// With cache read: flash op `op`'s data has left die `die` over the
    /// channel (the die itself was freed when its array read ended).
    DieReadOut { die: u32, op: u32 },
    /// Read data is in host memory: the controller posts the completion.
    CqePost { cmd: u32 },
    /// An MSI-X interrupt for queue pair `qp` reaches its CPU.
    Irq { qp: u32 },
    /// A steady-state check (fio `steadystate`) of tracker `tracker` is due.
    SteadyStateSample { tracker: u32 },
    /// The host issues admin command `cmd` (a Set Features) on CPU 0.
    AdminSubmit { cmd: u32 },
    /// The admin SQ tail doorbell reached the controller.
    AdminDoorbell,
    /// Fetched admin SQEs arrived in the controller.
    AdminSqesArrived { n: u32 },
    /// Firmware has decoded admin command `cmd`: it takes effect and completes.
    AdminExecute { cmd: u32 },
    /// The admin CQ's interrupt for `cmd` reaches CPU 0.
    AdminIrq { cmd: u32 },
    /// Time to record every SQ's occupancy (true and host-estimated).
    OccupancySample,
    /// A `--status-interval` is due: the run's progress callback sees the machine.
    StatusTick,
    /// The drive has read an HMB I/O command's metadata entry: the command starts.
    HmbStart { cmd: u32 },
    /// The admin CQ's interrupt for HMB I/O `cmd` reaches CPU 0.
    HmbIrq { cmd: u32 },
    /// A QEMU IOThread runs its event loop once (woken, or polling found work).
    IoThreadRun { iot: u32 },
    /// A virtqueue's interrupt reaches its vCPU.
    GuestIrq { vq: u32 },
}
