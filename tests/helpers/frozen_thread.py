"""One thread of a real process stopped, its other threads running on: how the tests make a
server whose main loop hangs while its HTTP threads answer (ggml-org/llama.cpp#25692)."""

from __future__ import annotations

import ctypes
import os

PTRACE_SEIZE, PTRACE_INTERRUPT, PTRACE_DETACH = 0x4206, 0x4207, 17
WALL = 0x40000000  # __WALL: wait for a traced thread of another process


class Frozen:
    """One thread of a process stopped by ptrace (PTRACE_SEIZE + PTRACE_INTERRUPT stop that thread
    alone; its other threads run on), until thaw() or this process ends."""

    def __init__(self, tid: int):
        self.libc = ctypes.CDLL(None, use_errno=True)
        self.libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
        self.tid = tid
        for request in (PTRACE_SEIZE, PTRACE_INTERRUPT):
            if self.libc.ptrace(request, tid, None, None) != 0:
                raise OSError(ctypes.get_errno(), f"ptrace {request:#x} on {tid}")
        os.waitpid(tid, WALL)

    def thaw(self) -> None:
        self.libc.ptrace(PTRACE_DETACH, self.tid, None, 0)
