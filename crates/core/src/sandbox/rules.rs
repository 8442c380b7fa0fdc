//! What a sandboxed command may touch: Landlock (the workspace read-write, the configured
//! folders read-only, a few devices, nothing else), and a seccomp filter refusing the calls a
//! command has no business making (tracing others, mounting, loading kernel code, the kernel
//! keyring, new namespaces). Both are demanded whole: a kernel that cannot enforce a piece
//! refuses the sandbox, naming it.

use std::collections::BTreeMap;

use landlock::{
    ABI, Access, AccessFs, CompatLevel, Compatible, Ruleset, RulesetAttr, RulesetCreatedAttr,
    RulesetStatus, path_beneath_rules,
};
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule,
};

use super::{Refusal, Spec};

/// The Landlock version demanded: file rights through truncation (Linux 6.2).
const FS_ABI: ABI = ABI::V3;

/// Devices every command needs, read-write.
const DEVICES: [&str; 4] = ["/dev/null", "/dev/zero", "/dev/urandom", "/dev/random"];

/// Confines this process and what it runs to the spec's folders.
pub fn landlock(spec: &Spec, private_tmp: bool) -> Result<(), Refusal> {
    let refused =
        |e: &dyn std::fmt::Display| Refusal::of("Landlock (ABI 3, Linux 6.2 or later)")(e);
    let everything = AccessFs::from_all(FS_ABI);
    let mut writable = vec![spec.workspace.clone()];
    if private_tmp {
        writable.push("/tmp".into());
    }
    let status = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(everything)
        .map_err(|e| refused(&e))?
        .create()
        .map_err(|e| refused(&e))?
        .add_rules(path_beneath_rules(
            &spec.read_only,
            AccessFs::from_read(FS_ABI),
        ))
        .and_then(|r| r.add_rules(path_beneath_rules(["/proc"], AccessFs::from_read(FS_ABI))))
        .and_then(|r| r.add_rules(path_beneath_rules(DEVICES, everything)))
        .and_then(|r| r.add_rules(path_beneath_rules(&writable, everything)))
        .map_err(|e| refused(&e))?
        .restrict_self()
        .map_err(|e| refused(&e))?;
    match status.ruleset {
        RulesetStatus::FullyEnforced => Ok(()),
        other => Err(refused(&format!("only {other:?} on this kernel"))),
    }
}

/// The system calls refused (`EPERM`) to a sandboxed command.
const REFUSED_CALLS: &[i64] = &[
    libc::SYS_ptrace,
    libc::SYS_process_vm_readv,
    libc::SYS_process_vm_writev,
    libc::SYS_mount,
    libc::SYS_umount2,
    libc::SYS_pivot_root,
    libc::SYS_chroot,
    libc::SYS_fsopen,
    libc::SYS_fsmount,
    libc::SYS_fsconfig,
    libc::SYS_move_mount,
    libc::SYS_open_tree,
    libc::SYS_mount_setattr,
    libc::SYS_keyctl,
    libc::SYS_add_key,
    libc::SYS_request_key,
    libc::SYS_kexec_load,
    libc::SYS_kexec_file_load,
    libc::SYS_bpf,
    libc::SYS_perf_event_open,
    libc::SYS_unshare,
    libc::SYS_setns,
    libc::SYS_init_module,
    libc::SYS_finit_module,
    libc::SYS_delete_module,
    libc::SYS_userfaultfd,
    libc::SYS_reboot,
    libc::SYS_swapon,
    libc::SYS_swapoff,
    libc::SYS_acct,
    libc::SYS_open_by_handle_at,
    libc::SYS_name_to_handle_at,
    libc::SYS_iopl,
    libc::SYS_ioperm,
];

/// `clone` flags that make a namespace (what `unshare` would).
const NAMESPACE_FLAGS: [i32; 7] = [
    libc::CLONE_NEWUSER,
    libc::CLONE_NEWNS,
    libc::CLONE_NEWPID,
    libc::CLONE_NEWNET,
    libc::CLONE_NEWIPC,
    libc::CLONE_NEWUTS,
    libc::CLONE_NEWCGROUP,
];

/// Applies the filters to this process and what it runs.
pub fn seccomp() -> Result<(), Refusal> {
    let refused = |e: &dyn std::fmt::Display| Refusal::of("seccomp")(e);
    let arch = std::env::consts::ARCH.try_into().map_err(|e| refused(&e))?;
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = REFUSED_CALLS
        .iter()
        .map(|call| (*call, Vec::new()))
        .collect();
    let mut namespaces = Vec::new();
    for flag in NAMESPACE_FLAGS {
        let flag = flag as u64;
        let condition = SeccompCondition::new(
            0,
            SeccompCmpArgLen::Qword,
            SeccompCmpOp::MaskedEq(flag),
            flag,
        )
        .map_err(|e| refused(&e))?;
        namespaces.push(SeccompRule::new(vec![condition]).map_err(|e| refused(&e))?);
    }
    rules.insert(libc::SYS_clone, namespaces);
    let eperm = SeccompAction::Errno(libc::EPERM as u32);
    let filter =
        SeccompFilter::new(rules, SeccompAction::Allow, eperm, arch).map_err(|e| refused(&e))?;
    // clone3 passes its flags in memory a filter cannot read: it is answered "not implemented",
    // and the C library falls back to clone, which the filter above reads.
    let clone3 = [(libc::SYS_clone3, Vec::new())].into_iter().collect();
    let enosys = SeccompAction::Errno(libc::ENOSYS as u32);
    let no_clone3 =
        SeccompFilter::new(clone3, SeccompAction::Allow, enosys, arch).map_err(|e| refused(&e))?;
    for filter in [no_clone3, filter] {
        let program: BpfProgram = filter
            .try_into()
            .map_err(|e: seccompiler::BackendError| refused(&e))?;
        seccompiler::apply_filter(&program).map_err(|e| refused(&e))?;
    }
    Ok(())
}
