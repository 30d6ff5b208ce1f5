//! The I/O path through a VM: a guest thread's bio enters the guest block
//! layer on its vCPU and its virtqueue (tag, locks, avail ring, notify); a
//! QEMU IOThread takes the available requests and submits them to the host
//! block layer with its own I/O priority, collects the host's AIO
//! completions into the used rings and signals the guest; the virtqueue's
//! interrupt on its vCPU completes the requests and wakes their threads.

use super::{IoThreadState as S, Vms};
use crate::host::cpu::Placement;
use crate::host::{Guests, Host};
use crate::sim::Ns;
use crate::sim::{Event, Queue};

/// The host sees the VMs through [`Guests`]: guest threads' bios enter the
/// guest block layer here, and host completions of IOThread requests come
/// back here.
impl Guests for Vms {
    fn vm_count(&self) -> usize {
        self.vms.len()
    }

    fn vm_vcpus(&self, vm: u32) -> (&str, u32, u32) {
        let rt = &self.vms[vm as usize];
        (&rt.name, rt.first_vcpu, rt.vcpus)
    }

    fn vcpu_cpu(&self, vcpu: u32) -> u32 {
        self.vcpus[vcpu as usize].placement.cpu
    }

    fn vcpu_placement(&mut self, vcpu: u32) -> &mut Placement {
        &mut self.vcpus[vcpu as usize].placement
    }

    /// A guest bio from thread `t` enters the guest block layer on its vCPU
    /// (host core `cpu`): it takes a tag of its virtqueue (one ring
    /// descriptor chain). Err(time) when the thread must sleep for one.
    fn guest_submit(&mut self, cur: Ns, cpu: u32, t: u32, r: u32, host: &mut Host, q: &mut Queue) -> Result<Ns, Ns> {
        let (vcpu, vdisk) = host.thread_vcpu(t).expect("a guest thread");
        let vm = self.vcpus[vcpu as usize].vm;
        let vq = self.queue_for(vm, vdisk, vcpu);
        host.set_request_vq(r, vq);
        let vqr = &mut self.vqs[vq as usize];
        if !vqr.tags.try_take() {
            vqr.tags.wait(r);
            return Err(cur);
        }
        Ok(self.guest_submit_with_tag(cur, cpu, r, host, q))
    }

    /// Continue a guest bio that holds its tag: guest blk-mq insert (the
    /// vCPU's own software queue, then the hardware context's lines shared
    /// by the vCPUs of this virtqueue), virtio_queue_rq under the virtqueue
    /// lock, the avail ring, and a notify if the IOThread sleeps. Returns
    /// when the submitting syscall returns in the guest.
    fn guest_submit_with_tag(&mut self, mut cur: Ns, cpu: u32, r: u32, host: &mut Host, q: &mut Queue) -> Ns {
        let c = host.costs();
        let v = self.ns;
        let vq = host.request(r).vq as usize;
        cur += c.blk_mq_insert_ns + 2 * c.sw_queue_lock_hold_ns;
        let ipi_ns = c.ipi_ns;
        let env = host.lock_env();
        // The guest's blk_mq_bio_to_request -> blk_account_io_start: the
        // virtual disk's in-flight counter, shared by all its queues' vCPUs.
        if let Some(l) = self.disk_stats.get_mut(self.vqs[vq].disk as usize) {
            cur = l.acquire(cur, cpu, 0, env);
        }
        let vqr = &mut self.vqs[vq];
        cur = vqr.hctx_lines.acquire(cur, cpu, 0, env);
        cur += v.guest_queue_rq_ns;
        cur = vqr.lock.acquire(cur, cpu, v.vq_lock_hold_ns, env);
        cur = vqr.ring.acquire(cur, cpu, 0, env);
        vqr.avail.push_back((r, cur));
        vqr.requests += 1;
        let i = vqr.iothread as usize;
        if self.iothread_notify(cur, i, cpu, v.vmexit_notify_ns, ipi_ns, q) {
            // Asleep: the guest's notify exited to KVM, whose ioeventfd woke it.
            self.vqs[vq].kicks += 1;
            cur += v.vmexit_notify_ns;
        }
        host.set_guest_submitted(r, cur);
        cur
    }

    /// A host AIO completion of guest request `r` (of virtqueue `vq`)
    /// reaches its IOThread.
    fn iothread_aio_complete(&mut self, at: Ns, vq: u32, r: u32, from_cpu: u32, ipi_ns: Ns, q: &mut Queue) {
        let i = self.vqs[vq as usize].iothread as usize;
        self.iothreads[i].completed.push_back((r, at));
        // Polling reads the AIO ring (QEMU's linux-aio poll handler); asleep, the eventfd wakes it.
        self.iothread_notify(at, i, from_cpu, 0, ipi_ns, q);
    }

    /// A host tag freed at `at` goes to IOThread request `r` (of virtqueue
    /// `vq`): the IOThread, asleep in io_submit, wakes.
    fn iothread_tag_granted(&mut self, at: Ns, vq: u32, r: u32, from_cpu: u32, ipi_ns: Ns, q: &mut Queue) {
        let i = self.vqs[vq as usize].iothread as usize;
        let iot = &mut self.iothreads[i];
        debug_assert_eq!(iot.tag_req, Some(r));
        iot.state = S::Waking;
        let ipi = if iot.cpu != from_cpu { ipi_ns } else { 0 };
        q.schedule(at + ipi, Event::IoThreadRun { iot: i as u32 });
    }
}

impl Vms {
    /// New work for IOThread `i` at `at` from `from_cpu`. Running, about to
    /// run or waiting for a tag: it will find the work (notifications are
    /// suppressed meanwhile). Polling: it sees the work at once. Asleep: it
    /// is woken after `signal_ns` (the notifier's exit) and an IPI if the
    /// notifier is on another CPU; returns true then.
    fn iothread_notify(&mut self, at: Ns, i: usize, from_cpu: u32, signal_ns: Ns, ipi_ns: Ns, q: &mut Queue) -> bool {
        let iot = &mut self.iothreads[i];
        match iot.state {
            S::Scheduled | S::Waking | S::WaitingTag => false,
            S::Polling { from, until } if at <= until => {
                iot.end_polling(at);
                iot.state = S::Scheduled;
                q.schedule(at.max(from), Event::IoThreadRun { iot: i as u32 });
                false
            }
            S::Polling { until, .. } => {
                iot.end_polling(until);
                iot.state = S::Waking;
                let ipi = if iot.cpu != from_cpu { ipi_ns } else { 0 };
                q.schedule(at + signal_ns + ipi, Event::IoThreadRun { iot: i as u32 });
                true
            }
        }
    }

    /// One pass of IOThread `i`'s event loop on its host CPU: finish a
    /// request that waited for a host tag, complete the host AIO
    /// completions into the used rings (one irqfd signal per virtqueue),
    /// then take every available request of its virtqueues and submit them
    /// to the host block layer in one io_submit batch, with the IOThread's
    /// I/O priority. With nothing to do it polls for `poll_max_ns`, then sleeps.
    pub fn iothread_run(&mut self, now: Ns, i: u32, host: &mut Host, q: &mut Queue) {
        let c = host.costs().clone();
        let v = self.ns;
        let ii = i as usize;
        let cpu = self.iothreads[ii].cpu;
        let mut cur = host.cpu_start(cpu, now);
        let begin = cur;
        {
            let iot = &mut self.iothreads[ii];
            match iot.state {
                S::Waking => {
                    cur += c.context_switch_ns;
                    iot.wakeups += 1;
                }
                S::Polling { .. } => iot.end_polling(now),
                S::Scheduled | S::WaitingTag => {}
            }
            iot.state = S::Scheduled;
        }
        let mut work = false;
        if let Some(r) = self.iothreads[ii].tag_req.take() {
            cur = host.submit_with_resource(cur, cpu, r, self, q);
            self.iothreads[ii].submitted += 1;
            work = true;
        }
        // Completions: used-ring entries, then one interrupt per virtqueue.
        let mut signal: Vec<u32> = Vec::new();
        while let Some(&(r, at)) = self.iothreads[ii].completed.front() {
            if at > cur {
                break;
            }
            self.iothreads[ii].completed.pop_front();
            self.iothreads[ii].completions += 1;
            work = true;
            cur += v.virtio_complete_ns;
            let vq = host.request(r).vq;
            let vqr = &mut self.vqs[vq as usize];
            cur = vqr.ring.acquire(cur, cpu, 0, host.lock_env());
            vqr.used.push_back((r, cur));
            if !vqr.irq_pending {
                vqr.irq_pending = true;
                signal.push(vq);
            }
        }
        for vq in signal {
            cur += v.irqfd_signal_ns;
            q.schedule(cur, Event::GuestIrq { vq });
        }
        // Submissions: everything available, one io_submit for the batch.
        let mut batch = 0u32;
        let mut blocked = false;
        let nvq = self.iothreads[ii].vqs.len();
        'queues: for k in 0..nvq {
            let vq = self.iothreads[ii].vqs[k] as usize;
            while let Some(&(r, at)) = self.vqs[vq].avail.front() {
                if at > cur {
                    break;
                }
                self.vqs[vq].avail.pop_front();
                work = true;
                if batch == 0 {
                    cur += c.syscall_ns;
                }
                batch += 1;
                cur += v.virtqueue_pop_ns;
                cur = self.vqs[vq].ring.acquire(cur, cpu, 0, host.lock_env());
                let prio = self.iothreads[ii].prio;
                host.route_request(r, cpu, prio);
                cur += c.bio_setup_ns;
                match host.submit_bio(cur, cpu, r, self, q) {
                    Ok(t) => {
                        cur = t;
                        self.iothreads[ii].submitted += 1;
                    }
                    Err(t) => {
                        cur = t;
                        self.iothreads[ii].tag_req = Some(r);
                        blocked = true;
                        break 'queues;
                    }
                }
            }
        }
        host.cpu_done(cpu, begin, cur);
        let iot = &mut self.iothreads[ii];
        if batch > 0 {
            iot.batches += 1;
        }
        iot.busy_ns += cur - begin;
        if blocked {
            iot.state = S::WaitingTag;
            return;
        }
        // Entries added (by CPUs that ran ahead) after this pass's time.
        let mut next = iot.completed.front().map(|&(_, at)| at);
        for &vq in &iot.vqs {
            if let Some(&(_, at)) = self.vqs[vq as usize].avail.front() {
                next = Some(next.map_or(at, |n: Ns| n.min(at)));
            }
        }
        if work {
            iot.state = S::Scheduled;
            q.schedule(cur, Event::IoThreadRun { iot: i });
        } else if let Some(t) = next {
            iot.state = S::Polling {
                from: cur,
                until: cur + iot.poll_max_ns,
            };
            iot.end_polling(t);
            iot.state = if t <= cur + iot.poll_max_ns {
                S::Scheduled
            } else {
                S::Waking
            };
            q.schedule(t.max(cur), Event::IoThreadRun { iot: i });
        } else {
            iot.state = S::Polling {
                from: cur,
                until: cur + iot.poll_max_ns,
            };
        }
    }

    /// Virtqueue `vq`'s interrupt on its vCPU: virtblk_done takes every
    /// used entry and completes its request *inside* the virtqueue lock
    /// (Linux virtio_blk.c holds vq->lock around the get_buf /
    /// blk_mq_complete_request loop): freeing the tag and waking the issuing
    /// thread, which on another vCPU is an IPI (a VM exit on the sender, an
    /// injected interrupt on the receiver) sent while the lock is held.
    pub fn guest_irq(&mut self, now: Ns, vq: u32, host: &mut Host, q: &mut Queue) {
        let c = host.costs().clone();
        let v = self.ns;
        let qi = vq as usize;
        let vcpu = self.vqs[qi].irq_vcpu as usize;
        let cpu = self.vcpus[vcpu].placement.cpu;
        let mut cur = host.cpu_start(cpu, now);
        let begin = cur;
        cur += v.interrupt_inject_ns + c.irq_entry_ns;
        let mut done = std::mem::take(&mut self.scratch);
        done.clear();
        {
            let vqr = &mut self.vqs[qi];
            vqr.interrupts += 1;
            while let Some(&(r, at)) = vqr.used.front() {
                if at > cur {
                    break;
                }
                vqr.used.pop_front();
                done.push(r);
            }
        }
        let remote = |h: &Host, r: u32| h.thread_cpu(h.request(r).thread) != cpu;
        let per = v.vq_lock_hold_ns + c.bio_complete_ns;
        let n_remote = done.iter().filter(|&&r| remote(host, r)).count() as Ns;
        let hold = per * done.len().max(1) as Ns + n_remote * v.vmexit_notify_ns;
        // blk_account_io_done for each request ended (in the guest it runs
        // inside the virtqueue lock; taken here just before it).
        if let Some(l) = self.disk_stats.get_mut(self.vqs[qi].disk as usize) {
            for _ in &done {
                cur = l.acquire(cur, cpu, 0, host.lock_env());
            }
        }
        let vqr = &mut self.vqs[qi];
        cur = vqr.ring.acquire(cur, cpu, 0, host.lock_env());
        let end = vqr.lock.acquire(cur, cpu, hold, host.lock_env());
        vqr.irq_pending = false;
        if let Some(&(_, at)) = vqr.used.front() {
            // Used entries timed after this handler: their own interrupt.
            vqr.irq_pending = true;
            q.schedule(at.max(end), Event::GuestIrq { vq });
        }
        // The handler's own critical section ends at `end`; walk it.
        let mut t = end - hold;
        for &r in &done {
            t += per;
            if let Some(w) = self.vqs[qi].tags.put() {
                let wt = host.request(w).thread;
                host.wake(t, wt, cpu, true, q);
            }
            let th = host.request(r).thread;
            host.push_completion(th, r);
            if remote(host, r) {
                t += v.vmexit_notify_ns;
                host.wake_remote(t + v.interrupt_inject_ns, th, q);
            } else {
                host.wake(t, th, cpu, false, q);
            }
        }
        cur = end;
        self.scratch = done;
        host.cpu_done(cpu, begin, cur);
    }
}
