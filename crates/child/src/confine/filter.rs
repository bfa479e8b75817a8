//! The seccomp filter the confiner puts on itself before `bash`: what
//! Landlock cannot say, the same on every ABI leash accepts
//! (docs/src/tools.md "What the kernel holds, ABI by ABI").
//!
//! - Sockets: no internet socket at all (`EAFNOSUPPORT`, what a kernel
//!   built without the family answers) — but in the command's private
//!   network namespace (`network.rs`), where `AF_INET` and `AF_INET6`
//!   reach its own loopback and nothing else; no Unix socket either
//!   (`EACCES`), so no `connect` to a Docker, D-Bus or ssh-agent socket
//!   outside the root, whatever the ABI (Landlock governs pathname
//!   socket connects only from ABI 9, abstract ones from 6). Connected
//!   `socketpair`s stay (jobservers, language runtimes), stream and
//!   seqpacket only: a datagram pair could `sendto` any socket's path.
//! - leash out of reach: no signal to leash, its process group or the
//!   supervisor (`kill`, `tgkill`, `rt_*sigqueueinfo`, `pidfd_open`,
//!   `F_SETOWN`), no `kill(-1)`, no `tkill`, no `pidfd_send_signal` (a
//!   `/proc/PID` directory is a pidfd); no process's limits, priority,
//!   scheduling or memory placement but the caller's own.
//! - Namespaces (`clone` with `CLONE_NEW*`, `clone3` answered `ENOSYS`
//!   so libc falls back to `clone`), System V IPC, `io_uring`,
//!   `ptrace`, `process_vm_*`, mounts, modules, BPF, keyrings, file
//!   handles: refused.
//! - No set-user-ID or set-group-ID bit on a file (`chmod`, `fchmod`,
//!   `fchmodat`, `fchmodat2`, a creating `open`/`openat`/`creat`,
//!   `mknod`; `openat2`, whose mode is behind a pointer, answers
//!   `ENOSYS` so libc takes `openat`): a command confined as root keeps
//!   `CAP_FSETID` and `CAP_FOWNER`, and a set-ID root program left in the
//!   checkout would outlive the run as a way up for whoever runs it later.
//! - x32 system calls (the same architecture, numbers with bit 30 set),
//!   which the rules above would not see: `ENOSYS`.
//!
//! It must never allow by default what a rule above names, and never
//! depend on the Landlock ABI for leash's own safety.

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

use super::spec::Guarded;

type Rules = BTreeMap<i64, Vec<SeccompRule>>;

/// `fcntl` commands that name a process to send `SIGIO`/`SIGURG` to
/// (Linux's values; libc spells the second only for some targets).
const F_SETOWN: u64 = 8;
const F_SETOWN_EX: u64 = 15;
/// The obsolete socket type, refused with the other unbound ones.
const SOCK_PACKET: i32 = 10;

/// Applies every filter of the module doc; `supervisor` is the confiner's
/// parent; `private_network`: the command is in a network namespace of
/// its own, where internet sockets reach its loopback alone.
pub(super) fn apply(
    private_network: bool,
    leash: &Guarded,
    supervisor: i32,
) -> Result<(), seccompiler::Error> {
    let arch = TargetArch::try_from(std::env::consts::ARCH)?;
    let filters = [
        (
            sockets_of_other_families(private_network)?,
            libc::EAFNOSUPPORT,
        ),
        (unix_sockets()?, libc::EACCES),
        (refused_always(), libc::EPERM),
        (reaching_out(leash, supervisor)?, libc::EPERM),
        (set_id_bits()?, libc::EPERM),
        (missing_calls(), libc::ENOSYS),
    ];
    for (rules, errno) in filters {
        let filter = SeccompFilter::new(
            rules,
            SeccompAction::Allow,
            SeccompAction::Errno(errno_of(errno)),
            arch,
        )?;
        seccompiler::apply_filter(&BpfProgram::try_from(filter)?)?;
    }
    #[cfg(target_arch = "x86_64")]
    seccompiler::apply_filter(&no_x32_calls())?;
    Ok(())
}

fn errno_of(errno: i32) -> u32 {
    u32::try_from(errno).unwrap_or(1)
}

/// A 32-bit argument as the filter compares it (a negative pid too).
fn dword(value: i32) -> u64 {
    u64::from(value.cast_unsigned())
}

fn arg(index: u8, op: SeccompCmpOp, value: u64) -> Result<SeccompCondition, seccompiler::Error> {
    Ok(SeccompCondition::new(
        index,
        SeccompCmpArgLen::Dword,
        op,
        value,
    )?)
}

/// A rule of one condition.
fn when(index: u8, op: SeccompCmpOp, value: u64) -> Result<SeccompRule, seccompiler::Error> {
    Ok(SeccompRule::new(vec![arg(index, op, value)?])?)
}

fn af_unix() -> u64 {
    u64::try_from(libc::AF_UNIX).unwrap_or(1)
}

/// `socket` and `socketpair` of any family but `AF_UNIX` (decided by the
/// next filter) and, in a private network namespace, `AF_INET` and
/// `AF_INET6`. Never netlink, packet or any other family: not even
/// inside the namespace.
fn sockets_of_other_families(private_network: bool) -> Result<Rules, seccompiler::Error> {
    let mut allowed = vec![af_unix()];
    if private_network {
        allowed.extend(
            [libc::AF_INET, libc::AF_INET6]
                .into_iter()
                .filter_map(|family| u64::try_from(family).ok()),
        );
    }
    let other = || -> Result<SeccompRule, seccompiler::Error> {
        let conditions = allowed
            .iter()
            .map(|family| arg(0, SeccompCmpOp::Ne, *family))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(SeccompRule::new(conditions)?)
    };
    Ok(BTreeMap::from([
        (libc::SYS_socket, vec![other()?]),
        (libc::SYS_socketpair, vec![other()?]),
    ]))
}

/// Every `socket(AF_UNIX, …)`, and `socketpair`s of a type that is not
/// connection-bound (the type's low bits; the flags above are free).
fn unix_sockets() -> Result<Rules, seccompiler::Error> {
    const TYPE_MASK: u64 = 0xf;
    let unbound = [
        libc::SOCK_DGRAM,
        libc::SOCK_RAW,
        libc::SOCK_RDM,
        SOCK_PACKET,
    ]
    .into_iter()
    .map(|kind| {
        when(
            1,
            SeccompCmpOp::MaskedEq(TYPE_MASK),
            u64::try_from(kind).unwrap_or(0),
        )
    })
    .collect::<Result<Vec<_>, _>>()?;
    Ok(BTreeMap::from([
        (
            libc::SYS_socket,
            vec![when(0, SeccompCmpOp::Eq, af_unix())?],
        ),
        (libc::SYS_socketpair, unbound),
    ]))
}

/// What no build needs and an escape would.
fn refused_always() -> Rules {
    [
        libc::SYS_io_uring_setup,
        libc::SYS_io_uring_enter,
        libc::SYS_io_uring_register,
        libc::SYS_ptrace,
        libc::SYS_process_vm_readv,
        libc::SYS_process_vm_writev,
        libc::SYS_process_madvise,
        libc::SYS_kcmp,
        libc::SYS_open_by_handle_at,
        libc::SYS_name_to_handle_at,
        libc::SYS_unshare,
        libc::SYS_setns,
        libc::SYS_mount,
        libc::SYS_umount2,
        libc::SYS_pivot_root,
        libc::SYS_chroot,
        libc::SYS_init_module,
        libc::SYS_finit_module,
        libc::SYS_delete_module,
        libc::SYS_kexec_load,
        libc::SYS_bpf,
        libc::SYS_perf_event_open,
        libc::SYS_userfaultfd,
        libc::SYS_keyctl,
        libc::SYS_add_key,
        libc::SYS_request_key,
        libc::SYS_tkill,
        // System V IPC: shared with every process of the machine, and
        // kept until reboot.
        libc::SYS_shmget,
        libc::SYS_shmat,
        libc::SYS_shmctl,
        libc::SYS_shmdt,
        libc::SYS_msgget,
        libc::SYS_msgsnd,
        libc::SYS_msgrcv,
        libc::SYS_msgctl,
        libc::SYS_semget,
        libc::SYS_semop,
        libc::SYS_semtimedop,
        libc::SYS_semctl,
    ]
    .into_iter()
    .map(|call| (call, Vec::new()))
    .collect()
}

/// Calls whose target is another process: refused when it is leash, its
/// group or the supervisor, or (limits, priority, scheduling) anyone but
/// the caller.
fn reaching_out(leash: &Guarded, supervisor: i32) -> Result<Rules, seccompiler::Error> {
    use SeccompCmpOp::{Eq, Gt, MaskedEq, Ne};
    let guarded = |index: u8| -> Result<Vec<SeccompRule>, seccompiler::Error> {
        [leash.pid, supervisor]
            .into_iter()
            .map(|pid| when(index, Eq, dword(pid)))
            .collect()
    };
    let others = |index: u8| -> Result<Vec<SeccompRule>, seccompiler::Error> {
        Ok(vec![when(index, Ne, 0)?])
    };
    let mut kill = guarded(0)?;
    kill.push(when(0, Eq, dword(-1))?);
    kill.push(when(0, Eq, dword(-leash.pgid))?);
    let namespaces = [
        libc::CLONE_NEWNS,
        libc::CLONE_NEWCGROUP,
        libc::CLONE_NEWUTS,
        libc::CLONE_NEWIPC,
        libc::CLONE_NEWUSER,
        libc::CLONE_NEWPID,
        libc::CLONE_NEWNET,
    ]
    .into_iter()
    .map(|flag| {
        let flag = u64::from(flag.cast_unsigned());
        when(0, MaskedEq(flag), flag)
    })
    .collect::<Result<Vec<_>, _>>()?;
    let set_owner = |value: u64| -> Result<SeccompRule, seccompiler::Error> {
        Ok(SeccompRule::new(vec![
            arg(1, Eq, F_SETOWN)?,
            arg(2, Eq, value)?,
        ])?)
    };
    let mut fcntl = vec![
        when(1, Eq, F_SETOWN_EX)?,
        SeccompRule::new(vec![
            arg(1, Eq, F_SETOWN)?,
            // A negative owner is a process group.
            arg(2, Gt, dword(i32::MAX))?,
        ])?,
    ];
    fcntl.push(set_owner(dword(leash.pid))?);
    fcntl.push(set_owner(dword(supervisor))?);
    Ok(BTreeMap::from([
        (libc::SYS_kill, kill),
        (libc::SYS_tgkill, guarded(0)?),
        (libc::SYS_rt_sigqueueinfo, guarded(0)?),
        (libc::SYS_rt_tgsigqueueinfo, guarded(0)?),
        (libc::SYS_pidfd_open, guarded(0)?),
        (libc::SYS_prlimit64, others(0)?),
        (
            libc::SYS_setpriority,
            vec![when(0, Ne, u64::from(libc::PRIO_PROCESS))?, when(1, Ne, 0)?],
        ),
        // IOPRIO_WHO_PROCESS is 1.
        (libc::SYS_ioprio_set, vec![when(0, Ne, 1)?, when(1, Ne, 0)?]),
        (libc::SYS_sched_setaffinity, others(0)?),
        (libc::SYS_sched_setscheduler, others(0)?),
        (libc::SYS_sched_setparam, others(0)?),
        (libc::SYS_sched_setattr, others(0)?),
        (libc::SYS_migrate_pages, others(0)?),
        (libc::SYS_move_pages, others(0)?),
        (libc::SYS_clone, namespaces),
        (libc::SYS_fcntl, fcntl),
    ]))
}

/// `fchmodat2` (Linux 6.6), by its number in the generic and x86-64
/// tables alike; libc does not name it everywhere yet.
const SYS_FCHMODAT2: i64 = 452;

/// Every call that would give a file a set-user-ID or set-group-ID bit:
/// the mode argument of the `chmod` family and `mknod`, and of an `open`
/// that creates (`O_CREAT`, or `O_TMPFILE`, whose file can be linked in
/// later).
fn set_id_bits() -> Result<Rules, seccompiler::Error> {
    use SeccompCmpOp::MaskedEq;
    let bits = [u64::from(libc::S_ISUID), u64::from(libc::S_ISGID)];
    let in_mode = |index: u8| -> Result<Vec<SeccompRule>, seccompiler::Error> {
        bits.iter()
            .map(|bit| when(index, MaskedEq(*bit), *bit))
            .collect()
    };
    let creating = [libc::O_CREAT, libc::O_TMPFILE].map(|flag| u64::from(flag.cast_unsigned()));
    let creating_with = |flags: u8, mode: u8| -> Result<Vec<SeccompRule>, seccompiler::Error> {
        let mut rules = Vec::new();
        for flag in creating {
            for bit in bits {
                rules.push(SeccompRule::new(vec![
                    arg(flags, MaskedEq(flag), flag)?,
                    arg(mode, MaskedEq(bit), bit)?,
                ])?);
            }
        }
        Ok(rules)
    };
    #[cfg_attr(not(target_arch = "x86_64"), allow(unused_mut))]
    let mut rules = BTreeMap::from([
        (libc::SYS_fchmod, in_mode(1)?),
        (libc::SYS_fchmodat, in_mode(2)?),
        (SYS_FCHMODAT2, in_mode(2)?),
        (libc::SYS_mknodat, in_mode(2)?),
        (libc::SYS_openat, creating_with(2, 3)?),
    ]);
    #[cfg(target_arch = "x86_64")]
    rules.extend([
        (libc::SYS_chmod, in_mode(1)?),
        (libc::SYS_creat, in_mode(1)?),
        (libc::SYS_mknod, in_mode(1)?),
        (libc::SYS_open, creating_with(1, 2)?),
    ]);
    Ok(rules)
}

/// Calls answered as a kernel without them would, so libc and runtimes
/// take their older path: `clone3` (its flags are behind a pointer the
/// filter cannot read), `openat2` (its mode likewise) and
/// `pidfd_send_signal`.
fn missing_calls() -> Rules {
    [
        libc::SYS_clone3,
        libc::SYS_openat2,
        libc::SYS_pidfd_send_signal,
    ]
    .into_iter()
    .map(|call| (call, Vec::new()))
    .collect()
}

/// `ENOSYS` for every x32 call (`nr & 0x4000_0000`), which shares
/// x86-64's architecture number and so passes the filters above.
#[cfg(target_arch = "x86_64")]
fn no_x32_calls() -> BpfProgram {
    use seccompiler::sock_filter;
    const LD_W_ABS: u16 = 0x20;
    const JGE_K: u16 = 0x35;
    const JEQ_K: u16 = 0x15;
    const RET_K: u16 = 0x06;
    const AUDIT_ARCH_X86_64: u32 = 0xc000_003e;
    const X32_BIT: u32 = 0x4000_0000;
    const ALLOW: u32 = 0x7fff_0000;
    const ERRNO: u32 = 0x0005_0000;
    let op = |code, jt, jf, k| sock_filter { code, jt, jf, k };
    vec![
        // seccomp_data.arch
        op(LD_W_ABS, 0, 0, 4),
        op(JEQ_K, 0, 3, AUDIT_ARCH_X86_64),
        // seccomp_data.nr
        op(LD_W_ABS, 0, 0, 0),
        op(JGE_K, 0, 1, X32_BIT),
        op(RET_K, 0, 0, ERRNO | errno_of(libc::ENOSYS)),
        op(RET_K, 0, 0, ALLOW),
    ]
}
