//! The command's private network namespace, where the kernel lets leash
//! make one: its own loopback, up, and no other interface, so a test that
//! starts a server on 127.0.0.1 and connects to it passes while nothing
//! outside the namespace can be reached (no route, no interface; an
//! abstract Unix socket is the namespace's own too).
//!
//! Root with `CAP_SYS_ADMIN` makes it directly; another user makes it
//! inside a user namespace of its own, its one uid and gid mapped to
//! themselves (the command keeps no capability in it past `exec`: its uid
//! is not 0 there). Where neither works (a container without
//! `CAP_SYS_ADMIN`; Ubuntu 24.04's `apparmor_restrict_unprivileged_userns`,
//! whose user namespaces grant no capability) the command has no
//! loopback, and leash says so at start. It runs in the confiner, before
//! the mounts, Landlock and seccomp; any step that fails ends the launch.

use nix::sched::{CloneFlags, unshare};
use rustix::net::{AddressFamily, RecvFlags, SendFlags, SocketType, netlink};

/// The loopback's interface index in every network namespace (the
/// kernel's `LOOPBACK_IFINDEX`).
const LOOPBACK_INDEX: i32 = 1;
/// `RTM_NEWLINK`, `NLM_F_REQUEST | NLM_F_ACK`, `NLMSG_ERROR`, `IFF_UP`.
const RTM_NEWLINK: u16 = 16;
const REQUEST_WITH_ACK: u16 = 0x1 | 0x4;
const NLMSG_ERROR: u16 = 2;
const IFF_UP: u32 = 1;

/// Moves this process into a new network namespace whose loopback is up:
/// root's directly (never in a user namespace: its uid would be 0 there,
/// with every capability over the files root owns), another user's in a
/// user namespace of its own.
pub(super) fn private_network() -> Result<(), String> {
    if nix::unistd::geteuid().is_root() {
        unshare(CloneFlags::CLONE_NEWNET)
            .map_err(|error| format!("no network namespace: {error}"))?;
    } else {
        own_user_namespace()?;
    }
    loopback_up().map_err(|error| format!("cannot bring the loopback up: {error}"))
}

/// A user namespace and a network namespace of this process's own, with
/// its uid and gid mapped to themselves (files it writes keep its owner).
fn own_user_namespace() -> Result<(), String> {
    let (uid, gid) = (nix::unistd::getuid(), nix::unistd::getgid());
    unshare(CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWNET)
        .map_err(|error| format!("no network namespace: {error}"))?;
    let write = |file: &str, text: String| {
        std::fs::write(format!("/proc/self/{file}"), text)
            .map_err(|error| format!("cannot write /proc/self/{file}: {error}"))
    };
    write("setgroups", "deny".to_owned())?;
    write("uid_map", format!("{uid} {uid} 1\n"))?;
    write("gid_map", format!("{gid} {gid} 1\n"))
}

/// One `RTM_NEWLINK` setting `IFF_UP` on the loopback, and its answer.
fn loopback_up() -> std::io::Result<()> {
    let socket = rustix::net::socket(AddressFamily::NETLINK, SocketType::RAW, None)?;
    rustix::net::sendto(
        &socket,
        &set_up_message(),
        SendFlags::empty(),
        &netlink::SocketAddrNetlink::new(0, 0),
    )?;
    let mut answer = [0u8; 256];
    let read = rustix::net::recv(&socket, &mut answer, RecvFlags::empty())?.0;
    acknowledged(answer.get(..read).unwrap_or_default())
}

/// `nlmsghdr` then `ifinfomsg`, in this machine's byte order.
fn set_up_message() -> Vec<u8> {
    let mut message = Vec::with_capacity(32);
    message.extend_from_slice(&32u32.to_ne_bytes());
    message.extend_from_slice(&RTM_NEWLINK.to_ne_bytes());
    message.extend_from_slice(&REQUEST_WITH_ACK.to_ne_bytes());
    message.extend_from_slice(&1u32.to_ne_bytes());
    message.extend_from_slice(&0u32.to_ne_bytes());
    // ifi_family AF_UNSPEC, padding, ifi_type
    message.extend_from_slice(&[0, 0, 0, 0]);
    message.extend_from_slice(&LOOPBACK_INDEX.to_ne_bytes());
    message.extend_from_slice(&IFF_UP.to_ne_bytes());
    message.extend_from_slice(&IFF_UP.to_ne_bytes());
    message
}

/// The kernel's answer: an `NLMSG_ERROR` whose error is 0.
fn acknowledged(answer: &[u8]) -> std::io::Result<()> {
    let field = |at: usize, len: usize| answer.get(at..at + len);
    let kind = field(4, 2)
        .and_then(|bytes| bytes.try_into().ok())
        .map(u16::from_ne_bytes);
    let error = field(16, 4)
        .and_then(|bytes| bytes.try_into().ok())
        .map(i32::from_ne_bytes);
    match (kind, error) {
        (Some(NLMSG_ERROR), Some(0)) => Ok(()),
        (Some(NLMSG_ERROR), Some(errno)) => Err(std::io::Error::from_raw_os_error(-errno)),
        _ => Err(std::io::Error::other("no acknowledgement from the kernel")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_message_is_a_newlink_of_the_loopback_and_only_an_ack_of_zero_is_success() {
        let message = set_up_message();
        assert_eq!(message.len(), 32);
        assert_eq!(&message[4..6], &RTM_NEWLINK.to_ne_bytes());
        assert_eq!(&message[20..24], &1i32.to_ne_bytes());
        let mut ack = vec![0u8; 36];
        ack[4..6].copy_from_slice(&NLMSG_ERROR.to_ne_bytes());
        assert!(acknowledged(&ack).is_ok());
        ack[16..20].copy_from_slice(&(-1i32).to_ne_bytes());
        assert_eq!(acknowledged(&ack).unwrap_err().raw_os_error(), Some(1));
        assert!(acknowledged(&[0; 3]).is_err());
    }
}
