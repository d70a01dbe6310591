"""The child's seccomp filter, one classic BPF program per architecture (x86_64 and aarch64): no new socket,
no new process, no reach into another process (docs/security.md#the-parser-sandbox)."""

import ctypes
import os
import platform
from dataclasses import dataclass

from shared.sandbox.linux import PR_SET_SECCOMP, prctl

_SECCOMP_MODE_FILTER = 2


@dataclass(frozen=True)
class Architecture:
    audit: int
    capset: int
    socket: int
    socketpair: int
    clone: int
    clone3: int
    execve: int
    execveat: int
    kill: int
    tkill: int
    tgkill: int
    prlimit64: int
    ptrace: int
    process_vm_readv: int
    process_vm_writev: int
    io_uring_setup: int
    pidfd_open: int
    pidfd_getfd: int
    fork: int | None = None
    vfork: int | None = None
    # x86_64's x32 ABI shares its audit arch: its syscall numbers are offset by this bit.
    x32_bit: int | None = None


# Syscall numbers from the kernel's uapi headers (asm/unistd_64.h; asm-generic/unistd.h for arm64, which
# has no fork or vfork: glibc forks with clone).
ARCHITECTURES = {
    "x86_64": Architecture(
        audit=0xC000003E,
        capset=126,
        socket=41,
        socketpair=53,
        clone=56,
        clone3=435,
        execve=59,
        execveat=322,
        kill=62,
        tkill=200,
        tgkill=234,
        prlimit64=302,
        ptrace=101,
        process_vm_readv=310,
        process_vm_writev=311,
        io_uring_setup=425,
        pidfd_open=434,
        pidfd_getfd=438,
        fork=57,
        vfork=58,
        x32_bit=0x40000000,
    ),
    "aarch64": Architecture(
        audit=0xC00000B7,
        capset=91,
        socket=198,
        socketpair=199,
        clone=220,
        clone3=435,
        execve=221,
        execveat=281,
        kill=129,
        tkill=130,
        tgkill=131,
        prlimit64=261,
        ptrace=117,
        process_vm_readv=270,
        process_vm_writev=271,
        io_uring_setup=425,
        pidfd_open=434,
        pidfd_getfd=438,
    ),
}

_EPERM, _ENOSYS = 1, 38
_CLONE_THREAD = 0x00010000
# classic BPF
_LD_W_ABS, _JEQ_K, _JGE_K, _JSET_K, _RET_K = 0x20, 0x15, 0x35, 0x45, 0x06
_RET_ALLOW = 0x7FFF0000
_RET_ERRNO = 0x00050000
# struct seccomp_data: int nr; u32 arch; u64 instruction_pointer; u64 args[6] (the low word first)
_NR, _ARCH, _ARG0_LOW = 0, 4, 16


class _SockFilter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_SockFilter))]


def seccomp_program(arch: Architecture, own_pid: int) -> list[tuple[int, int, int, int]]:
    """The filter, as (code, jt, jf, k) instructions: everything is allowed but what gives the child a way
    out (a socket, a process, another process's memory or descriptors, a signal to another process)."""
    deny = _RET_ERRNO | _EPERM
    program: list[tuple[int, int, int, int]] = [
        (_LD_W_ABS, 0, 0, _ARCH),
        (_JEQ_K, 1, 0, arch.audit),
        (_RET_K, 0, 0, deny),  # another ABI (i386 on x86_64, AArch32 on arm64): other numbers, all refused
        (_LD_W_ABS, 0, 0, _NR),
    ]
    if arch.x32_bit is not None:
        program += [(_JGE_K, 0, 1, arch.x32_bit), (_RET_K, 0, 0, deny)]
    refused = [
        arch.socket,
        arch.socketpair,
        arch.io_uring_setup,  # io_uring can open sockets (IORING_OP_SOCKET) without the socket syscall
        arch.execve,
        arch.execveat,
        arch.ptrace,
        arch.process_vm_readv,
        arch.process_vm_writev,
        arch.pidfd_open,
        arch.pidfd_getfd,
        arch.tkill,  # a thread id of any process; tgkill names the process
        *(number for number in (arch.fork, arch.vfork) if number is not None),
    ]
    for number in refused:
        program += [(_JEQ_K, 0, 1, number), (_RET_K, 0, 0, deny)]
    # clone3 passes its flags in a struct the filter cannot read: ENOSYS makes glibc use clone.
    program += [(_JEQ_K, 0, 1, arch.clone3), (_RET_K, 0, 0, _RET_ERRNO | _ENOSYS)]
    # clone: a thread (CLONE_THREAD, which the kernel allows only with CLONE_VM) and nothing else.
    program += [
        (_JEQ_K, 0, 4, arch.clone),
        (_LD_W_ABS, 0, 0, _ARG0_LOW),
        (_JSET_K, 0, 1, _CLONE_THREAD),
        (_RET_K, 0, 0, _RET_ALLOW),
        (_RET_K, 0, 0, deny),
    ]
    # kill and tgkill: only this process (pid_t is the low word); prlimit64 also with pid 0 (itself).
    for number in (arch.kill, arch.tgkill):
        program += [
            (_JEQ_K, 0, 4, number),
            (_LD_W_ABS, 0, 0, _ARG0_LOW),
            (_JEQ_K, 0, 1, own_pid),
            (_RET_K, 0, 0, _RET_ALLOW),
            (_RET_K, 0, 0, deny),
        ]
    program += [
        (_JEQ_K, 0, 5, arch.prlimit64),
        (_LD_W_ABS, 0, 0, _ARG0_LOW),
        (_JEQ_K, 1, 0, 0),
        (_JEQ_K, 0, 1, own_pid),
        (_RET_K, 0, 0, _RET_ALLOW),
        (_RET_K, 0, 0, deny),
    ]
    program.append((_RET_K, 0, 0, _RET_ALLOW))
    return program


def install(problems: list[str]) -> bool:
    """In the child, after PR_SET_NO_NEW_PRIVS: the filter for this machine, or a problem named in `problems`."""
    arch = ARCHITECTURES.get(platform.machine())
    if arch is None:
        problems.append(f"no seccomp filter for {platform.machine()}")
        return False
    program = seccomp_program(arch, os.getpid())
    instructions = (_SockFilter * len(program))(*(_SockFilter(*instruction) for instruction in program))
    fprog = _SockFprog(len(program), instructions)
    if prctl(PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(fprog)) != 0:
        problems.append(f"the kernel refused the seccomp filter (errno {ctypes.get_errno()})")
        return False
    return True
