"""deploy_sandbox_exec.py ALLOW_JSON -- PROGRAM ARGS...: apply MDWE and a seccomp allow-list, exec.

Runs as its own process (not a preexec_fn in a threaded parent): set PR_SET_MDWE, load a filter
that allows the listed system calls and fails every other with EPERM (socket() only for the listed
address families, else EAFNOSUPPORT), then execv the program.
"""

import ctypes
import errno
import json
import os
import sys

PR_SET_MDWE, PR_MDWE_REFUSE_EXEC_GAIN = 65, 1
SCMP_ACT_ALLOW = 0x7FFF0000
SCMP_ACT_ERRNO_EPERM = 0x00050000 | errno.EPERM
SCMP_ACT_ERRNO_EAFNOSUPPORT = 0x00050000 | errno.EAFNOSUPPORT
SCMP_CMP_EQ = 4
AF_MAX = 64  # above every address family Linux defines (46 in 6.x)


class ArgCmp(ctypes.Structure):
    """struct scmp_arg_cmp"""
    _fields_ = [("arg", ctypes.c_uint), ("op", ctypes.c_int), ("datum_a", ctypes.c_uint64), ("datum_b", ctypes.c_uint64)]


def main() -> None:
    allow_file, separator, *argv = sys.argv[1:]
    assert separator == "--" and argv, "usage: deploy_sandbox_exec.py ALLOW_JSON -- PROGRAM ARGS..."
    with open(allow_file) as f:
        policy = json.load(f)
    names, families = policy["syscalls"], policy["socket_families"]

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_MDWE, PR_MDWE_REFUSE_EXEC_GAIN, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_MDWE)")

    seccomp = ctypes.CDLL("libseccomp.so.2", use_errno=True)
    seccomp.seccomp_init.restype = ctypes.c_void_p
    seccomp.seccomp_init.argtypes = [ctypes.c_uint32]
    seccomp.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
    seccomp.seccomp_rule_add.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int, ctypes.c_uint]
    seccomp.seccomp_rule_add_array.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int, ctypes.c_uint,
                                               ctypes.POINTER(ArgCmp)]
    seccomp.seccomp_load.argtypes = [ctypes.c_void_p]
    ctx = seccomp.seccomp_init(SCMP_ACT_ERRNO_EPERM)
    if not ctx:
        raise OSError("seccomp_init failed")
    socket_nr = seccomp.seccomp_syscall_resolve_name(b"socket")
    for name in names:
        number = seccomp.seccomp_syscall_resolve_name(name.encode())
        if number < 0 or number == socket_nr:
            continue  # not a system call on this architecture (systemd skips those too); socket: below
        rc = seccomp.seccomp_rule_add(ctx, SCMP_ACT_ALLOW, number, 0)
        if rc not in (0, -errno.EEXIST):
            raise OSError(-rc, f"seccomp_rule_add({name})")
    if "socket" in names:
        # Like RestrictAddressFamilies=: socket() of an allowed family passes, another gets
        # EAFNOSUPPORT (one rule per family number: rules on one call must not overlap).
        for family in range(AF_MAX):
            action = SCMP_ACT_ALLOW if family in families else SCMP_ACT_ERRNO_EAFNOSUPPORT
            cmp = ArgCmp(0, SCMP_CMP_EQ, family, 0)
            rc = seccomp.seccomp_rule_add_array(ctx, action, socket_nr, 1, ctypes.byref(cmp))
            if rc != 0:
                raise OSError(-rc, f"seccomp rule for socket({family})")
    rc = seccomp.seccomp_load(ctx)  # also sets no_new_privs, as NoNewPrivileges=yes does
    if rc != 0:
        raise OSError(-rc, "seccomp_load")
    os.execv(argv[0], argv)


if __name__ == "__main__":
    main()
