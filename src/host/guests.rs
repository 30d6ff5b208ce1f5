//! The virtual machines above the host, as the host sees them. A guest's fio
//! thread is a host thread that runs wherever its vCPU runs; its bio enters
//! the guest's block layer and virtqueue rather than the host's; and a host
//! request submitted by a QEMU IOThread completes back to that IOThread.
//! `virt::Vms` implements [`Guests`], so the host never names the layer
//! above it (a run without VMs passes an empty `Vms`).

use super::cpu::Placement;
use super::Host;
use crate::sim::{Ns, Queue};

pub trait Guests {
    /// Number of VMs.
    fn vm_count(&self) -> usize;
    /// VM `vm`'s name, its first vCPU (numbered over all VMs) and its vCPU count.
    fn vm_vcpus(&self, vm: u32) -> (&str, u32, u32);
    /// The host CPU vCPU `vcpu` is on now.
    fn vcpu_cpu(&self, vcpu: u32) -> u32;
    /// Where vCPU `vcpu` runs on the host's cores (it may migrate).
    fn vcpu_placement(&mut self, vcpu: u32) -> &mut Placement;
    /// Guest thread `t`'s bio `r` enters the guest block layer on host core
    /// `cpu`: Ok(time its submitting syscall returns in the guest), or
    /// Err(time) when the thread must sleep for a virtqueue tag.
    fn guest_submit(&mut self, cur: Ns, cpu: u32, t: u32, r: u32, host: &mut Host, q: &mut Queue) -> Result<Ns, Ns>;
    /// Continue guest bio `r`, which now holds its virtqueue tag.
    fn guest_submit_with_tag(&mut self, cur: Ns, cpu: u32, r: u32, host: &mut Host, q: &mut Queue) -> Ns;
    /// The host completed IOThread request `r` (of virtqueue `vq`) at `at` on `from_cpu`.
    fn iothread_aio_complete(&mut self, at: Ns, vq: u32, r: u32, from_cpu: u32, ipi_ns: Ns, q: &mut Queue);
    /// A host tag freed at `at` on `from_cpu` goes to IOThread request `r` (of virtqueue `vq`).
    fn iothread_tag_granted(&mut self, at: Ns, vq: u32, r: u32, from_cpu: u32, ipi_ns: Ns, q: &mut Queue);
}
